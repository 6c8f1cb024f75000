"""Azure: what a stack asks of a subscription (``quota``), what Azure answers (``facts``, through the Azure SDKs),
and the ``aks-gpu preflight`` command that compares them (``preflight``, ``preflight_cmd``)."""
