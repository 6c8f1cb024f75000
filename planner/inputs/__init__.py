"""What a plan reads: the stack file (``stackfile``), through bounded YAML and JSON loaders that refuse hostile
input (``safe_yaml``, ``safe_json``, ``bounded``, ``yaml_walk``), and where the pinned upstream data lives
(``upstream``)."""
