"""Python client for hgeval-server (gRPC), and an lm-evaluation-harness model adapter
(hgeval.lm_eval_adapter, registered as `hgeval` when lm_eval is installed)."""

from hgeval.client import Client, Generation, HgevalError, bos_mode, is_final

__all__ = ["Client", "Generation", "HgevalError", "bos_mode", "is_final"]
