"""The aks-gpu-guardrails CrossGuard pack. Rules are pure functions in ``policies.rules`` so that
the pack, the offline planner and ``aks-gpu scan`` share one implementation."""
