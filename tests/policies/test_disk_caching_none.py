"""azure-disk-caching-none: Azure Disk storage classes set cachingMode: None."""

from aks_gpu_inference.policies.manifests import UNKNOWN
from aks_gpu_inference.policies.rules.disk_caching_none import RULE

from ._fixtures import Case, storage_class, table_tests

PROVISIONERS = ("disk.csi.azure.com", "kubernetes.io/azure-disk")


def sc(parameters=None, api_version="v1"):
    return lambda provisioner: [storage_class(provisioner=provisioner, parameters=parameters, api_version=api_version)]


PREFIX = "StorageClass managed-premium-nocache: parameters.cachingMode is "
FIX = "; set cachingMode: None for disks on GPU nodes"

CASES = [
    Case("cachingMode None", sc({"skuName": "Premium_LRS", "cachingMode": "None"}), over=PROVISIONERS),
    Case("v1beta1 StorageClass", sc({"cachingMode": "None"}, api_version="v1beta1"), over=PROVISIONERS),
    Case(
        "not set",
        sc({"skuName": "Premium_LRS"}),
        once=(PREFIX + "not set (the driver defaults to ReadOnly)" + FIX,),
        over=PROVISIONERS,
    ),
    Case("no parameters", sc(), once=(PREFIX + "not set (the driver defaults to ReadOnly)",), over=PROVISIONERS),
    Case("ReadOnly", sc({"cachingMode": "ReadOnly"}), once=(PREFIX + "'ReadOnly'" + FIX,), over=PROVISIONERS),
    Case("ReadWrite", sc({"cachingMode": "ReadWrite"}), once=(PREFIX + "'ReadWrite'" + FIX,), over=PROVISIONERS),
    Case("parameter key in another case", sc({"cachingmode": "ReadOnly"}), once=(PREFIX + "'ReadOnly'",), over=PROVISIONERS),
    Case("lower-case none is not None", sc({"cachingMode": "none"}), once=(PREFIX + "'none'",), over=PROVISIONERS),
    Case(
        "v1beta1 StorageClass without cachingMode",
        sc({"skuName": "Premium_LRS"}, api_version="v1beta1"),
        once=(PREFIX + "not set",),
        over=PROVISIONERS,
    ),
    Case("Azure Files needs nothing", sc({"skuName": "Premium_LRS"}), over=("file.csi.azure.com",)),
    Case("mandatory override", sc(), once=(PREFIX + "not set",), level="mandatory", over=("disk.csi.azure.com",)),
    Case("disabled", sc(), level="disabled", over=("disk.csi.azure.com",)),
    # unknown values are skipped
    Case("unknown parameters", sc(UNKNOWN), over=PROVISIONERS),
    Case("unknown cachingMode", sc({"cachingMode": UNKNOWN}), over=PROVISIONERS),
    Case("unknown provisioner", sc({"skuName": "Premium_LRS"}), over=(UNKNOWN,)),
]


test_rule, test_through_analyzer, test_table_covers_the_rule = table_tests(RULE, CASES)
