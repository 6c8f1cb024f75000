"""Who needs a Hugging Face token: a model whose repository is gated downloads only with the token of an account that
accepted its terms; an open one downloads without. ``models.json`` says which catalog models are gated (with its
sources); for a model it does not know (``model_facts`` without ``gated``), the stack plans with a warning rather
than a refusal, since most repositories are open."""

from __future__ import annotations

from typing import Literal

from .model_facts import ModelFactsArgs

TOKEN_COMMAND = "pulumi config set --secret hf_token  (it prompts for the token)"


def token_need(facts: ModelFactsArgs | None) -> Literal["gated", "open", "unknown"]:
    """Whether downloading the model's weights from the hub needs a token."""
    if facts is None or facts.gated is None:
        return "unknown"
    return "gated" if facts.gated else "open"


def missing_token_problem(model: str, facts: ModelFactsArgs | None) -> str | None:
    """Why a model without a token cannot download: its repository is gated. None otherwise."""
    if token_need(facts) != "gated":
        return None
    return (
        f"{model} is a gated Hugging Face repository (components/core/models.json): give hf_token, the token of an "
        f"account that accepted the model's terms ({TOKEN_COMMAND}); it becomes a Kubernetes Secret, never a plain env value"
    )


def missing_token_warning(model: str, facts: ModelFactsArgs | None) -> str | None:
    """A warning for a model the catalog cannot say is open, planned without a token. None otherwise."""
    if token_need(facts) != "unknown":
        return None
    return (
        f"no hf_token, and whether {model}'s Hugging Face repository is gated is not known here: a gated one fails "
        f"to download at start (401); if it is, {TOKEN_COMMAND}; say so in model_facts.gated (true or false) to "
        f"settle it"
    )
