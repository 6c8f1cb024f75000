"""Kubernetes schemas and CEL: CustomResourceDefinitions parsed once and indexed (``crd_files``), a custom
resource checked as the API server checks it (``crd_schema``, ``crd_metadata``, ``schema_keywords``), and CEL
evaluated with Kubernetes' library (``crd_cel``, ``cel_library``, ``json_values``)."""
