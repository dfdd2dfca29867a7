"""The runner's model proxy: each CLI reaches its model API through it and holds only a placeholder key."""

from ambient_runner.model_proxy.apis import ANTHROPIC, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, ModelApi, Upstream
from ambient_runner.model_proxy.server import ModelProxy

__all__ = ["ANTHROPIC", "GEMINI", "OPENAI_CHAT", "OPENAI_RESPONSES", "ModelApi", "ModelProxy", "Upstream"]
