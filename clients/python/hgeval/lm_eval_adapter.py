"""lm-evaluation-harness model `hgeval`: lm-eval's three request types mapped onto
hgeval-server's RPCs.

  loglikelihood          -> Loglikelihood (text pairs; the server applies lm-eval's pair
                            encoding and left truncation to max_length)
  loglikelihood_rolling  -> LoglikelihoodRolling (lm-eval's disjoint windows of max_length)
  generate_until         -> Generate (lm_eval mode: the context cut as lm-eval; until,
                            max_gen_toks, greedy unless sampling is asked)

The mapping functions below need only this package; the `HgevalLM` class exists when
lm_eval is installed. lm-eval's command line does not import third-party models, so run
it through this module, which registers the model first:

  PYTHONPATH=build/clients/python python3 -m hgeval.lm_eval_adapter --model hgeval \\
      --model_args server=127.0.0.1:50051,model=hgrn2 --tasks piqa --limit 100
"""

from __future__ import annotations

import os
from typing import Iterable, List, Optional, Sequence, Tuple

from hgeval.client import Client, bos_mode
from hgeval.v1 import models_pb2

DEFAULT_MAX_GEN_TOKS = 256  # lm-eval's default max_gen_toks


def loglikelihood_request(
    model: str, pairs: Iterable[Tuple[str, str]], *, bos: Optional[str], max_length: int
) -> models_pb2.LoglikelihoodRequest:
    """lm-eval `loglikelihood` requests (context, continuation) as one RPC request."""
    request = models_pb2.LoglikelihoodRequest(
        model=model.encode(), bos_mode=bos_mode(bos), truncate=True, max_length=max_length
    )
    for context, continuation in pairs:
        request.pairs.add(context=context.encode(), continuation=continuation.encode())
    return request


def rolling_request(
    model: str, texts: Iterable[str], *, bos: Optional[str], max_length: int
) -> models_pb2.LoglikelihoodRollingRequest:
    """lm-eval `loglikelihood_rolling` requests (whole texts) as one RPC request."""
    request = models_pb2.LoglikelihoodRollingRequest(
        model=model.encode(), bos_mode=bos_mode(bos), max_length=max_length
    )
    for text in texts:
        request.inputs.add(text=text.encode())
    return request


def generate_request(
    model: str,
    context: str,
    gen_kwargs: dict,
    *,
    bos: Optional[str],
    default_max_gen_toks: int = DEFAULT_MAX_GEN_TOKS,
    seed: int = 1234,
    max_length: int = 0,
) -> models_pb2.GenerateRequest:
    """An lm-eval `generate_until` request (context, gen_kwargs) as a Generate request.

    Greedy unless the task asks for sampling, as lm-eval's HF model decides: do_sample=True,
    or a temperature > 0 with do_sample unset. Keys the server cannot honour raise
    ValueError instead of being dropped silently. The server prepares it as lm-eval's
    generate_until (`lm_eval`: the context cut to its last max_length - max_gen_toks
    tokens, the EOS token's text added to `until`), as hgeval's own evaluator does.
    """
    kwargs = dict(gen_kwargs)
    until = kwargs.pop("until", None)
    if until is None:
        until = []
    elif isinstance(until, str):
        until = [until]
    elif not isinstance(until, (list, tuple)):
        raise ValueError(f"until must be a string or a list of strings, not {until!r}")
    max_gen_toks = int(kwargs.pop("max_gen_toks", default_max_gen_toks))
    do_sample = kwargs.pop("do_sample", None)
    temperature = float(kwargs.pop("temperature", 0.0))
    top_p = float(kwargs.pop("top_p", 0.0) or 0.0)
    sample = do_sample is True or (do_sample is None and temperature > 0.0)
    if sample and temperature == 0.0:
        temperature = 1.0  # HF's default temperature when sampling
    if kwargs:
        raise ValueError(f"generation options the hgeval server does not offer: {sorted(kwargs)}")
    return models_pb2.GenerateRequest(
        model=model.encode(),
        prompt=context.encode(),
        bos_mode=bos_mode(bos),
        max_tokens=max_gen_toks,
        until=[u.encode() for u in until],
        temperature=temperature if sample else 0.0,
        top_p=top_p if sample else 0.0,
        seed=seed if sample else 0,
        lm_eval=True,
        max_length=max_length,
    )


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


try:
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model
except ImportError:  # lm_eval is optional: the mapping above works without it
    LM = None

if LM is not None:

    @register_model("hgeval")
    class HgevalLM(LM):
        """--model hgeval --model_args server=HOST:PORT,model=NAME[,token=...,bos=tokenizer|none,
        max_length=N,max_gen_toks=N,tls=True,seed=N] (token also from $HGEVAL_AUTH_TOKEN)."""

        def __init__(
            self,
            server: str = "127.0.0.1:50051",
            model: Optional[str] = None,
            token: Optional[str] = None,
            bos: str = "tokenizer",
            max_length: Optional[int] = None,
            max_gen_toks: int = DEFAULT_MAX_GEN_TOKS,
            batch_size=256,
            tls: bool = False,
            seed: int = 1234,
            **unused,  # lm-eval's device / max_batch_size mean nothing for a remote model
        ):
            super().__init__()
            self.client = Client(
                server, token=token or os.environ.get("HGEVAL_AUTH_TOKEN"), tls=str(tls) == "True"
            )
            models = {m.name: m for m in self.client.models()}
            if model is None:
                if len(models) != 1:
                    raise ValueError(f"pass model=NAME; the server has {sorted(models)}")
                model = next(iter(models))
            if model not in models:
                raise ValueError(f"the server has no model {model!r}; it has {sorted(models)}")
            self.model = model
            self.bos = None if bos in (None, "tokenizer") else bos
            bos_mode(self.bos)  # fail early on a bad value
            self.max_length = int(max_length or models[model].lm_eval_max_length or 2048)
            self.max_gen_toks = int(max_gen_toks)
            self.batch_size = int(batch_size) if str(batch_size).isdigit() else 256
            self.seed = int(seed)

        def loglikelihood(self, requests, disable_tqdm: bool = False) -> List[Tuple[float, bool]]:
            out = []
            for chunk in _chunks([r.args for r in requests], self.batch_size):
                request = loglikelihood_request(
                    self.model, chunk, bos=self.bos, max_length=self.max_length
                )
                out.extend((r.logprob, r.is_greedy) for r in self.client.score_request(request))
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> List[float]:
            out = []
            for chunk in _chunks([r.args[0] for r in requests], self.batch_size):
                request = rolling_request(
                    self.model, chunk, bos=self.bos, max_length=self.max_length
                )
                out.extend(r.logprob for r in self.client.rolling_request(request))
            return out

        def generate_until(self, requests, disable_tqdm: bool = False) -> List[str]:
            out = []
            for request in requests:
                context, gen_kwargs = request.args[0], request.args[1]
                mapped = generate_request(
                    self.model,
                    context,
                    gen_kwargs,
                    bos=self.bos,
                    default_max_gen_toks=self.max_gen_toks,
                    seed=self.seed,
                    max_length=self.max_length,
                )
                out.append(self.client.generate_request(mapped).text)
            return out


def main() -> None:
    """lm-eval's command line with the `hgeval` model registered."""
    if LM is None:
        raise SystemExit("lm_eval is not installed (pip install lm-eval)")
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


if __name__ == "__main__":
    main()
