"""A small client for hgeval-server's gRPC services (hgeval.v1.ModelService, JobService).

Every method is one RPC; failures raise HgevalError with the gRPC status code and the
server's message. Text is sent as UTF-8 (the proto's `bytes` text fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import grpc

from hgeval.v1 import jobs_pb2, jobs_pb2_grpc, models_pb2, models_pb2_grpc

# A scoring pair: (context, continuation) as text, or as token-id lists.
Pair = Union[Tuple[str, str], Tuple[Sequence[int], Sequence[int]]]

_BOS_MODES = {
    None: models_pb2.BOS_MODE_UNSPECIFIED,
    "tokenizer": models_pb2.BOS_MODE_TOKENIZER,
    "none": models_pb2.BOS_MODE_NONE,
}

_FINAL_JOB_STATES = (
    jobs_pb2.JOB_STATE_SUCCEEDED,
    jobs_pb2.JOB_STATE_FAILED,
    jobs_pb2.JOB_STATE_CANCELLED,
)


class HgevalError(Exception):
    """A failed call: `code` is the grpc.StatusCode, `message` the server's explanation."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def bos_mode(name: Optional[str]) -> int:
    """'tokenizer' (lm-eval >= 0.4.9.2, also the default), 'none' (lm-eval <= 0.4.9.1)."""
    if name not in _BOS_MODES:
        raise ValueError(f"bos must be one of 'tokenizer', 'none' or None, not {name!r}")
    return _BOS_MODES[name]


def is_final(state: int) -> bool:
    return state in _FINAL_JOB_STATES


@dataclass
class Generation:
    text: str
    token_ids: List[int] = field(default_factory=list)
    finish_reason: str = ""  # FinishReason name without the prefix: "LENGTH", "STOP_TOKEN", ...
    prompt_tokens: int = 0
    cached: bool = False


def _raise(error: grpc.RpcError) -> None:
    raise HgevalError(error.code(), error.details() or "") from None


class Client:
    """Connects to one hgeval-server (host:port).

    token: the bearer token (sent as `authorization: Bearer <token>`); tls: use TLS with
    `root_certificates` (PEM bytes; None: the system's); timeout: seconds per call (None:
    no deadline).
    """

    def __init__(
        self,
        address: str,
        token: Optional[str] = None,
        tls: bool = False,
        root_certificates: Optional[bytes] = None,
        timeout: Optional[float] = None,
    ):
        options = [
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", -1),
        ]
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._models = models_pb2_grpc.ModelServiceStub(self._channel)
        self._jobs = jobs_pb2_grpc.JobServiceStub(self._channel)
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._timeout = timeout

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method, request):
        try:
            return method(request, metadata=self._metadata, timeout=self._timeout)
        except grpc.RpcError as error:
            _raise(error)

    def _stream(self, method, request) -> Iterator:
        try:
            yield from method(request, metadata=self._metadata, timeout=self._timeout)
        except grpc.RpcError as error:
            _raise(error)

    # Model calls.

    def models(self) -> List[models_pb2.ModelInfo]:
        return list(self._call(self._models.ListModels, models_pb2.ListModelsRequest()).models)

    def tokenize(self, model: str, text: str, add_special: bool = False) -> List[int]:
        request = models_pb2.TokenizeRequest(
            model=model.encode(), text=text.encode(), add_special=add_special
        )
        return list(self._call(self._models.Tokenize, request).ids)

    def detokenize(self, model: str, ids: Sequence[int]) -> models_pb2.DetokenizeResponse:
        request = models_pb2.DetokenizeRequest(model=model.encode(), ids=list(ids))
        return self._call(self._models.Detokenize, request)

    def score(
        self,
        model: str,
        pairs: Iterable[Pair],
        *,
        bos: Optional[str] = None,
        return_token_logprobs: bool = False,
        top_k: int = 0,
        truncate: bool = False,
        max_length: int = 0,
        no_cache: bool = False,
    ) -> List[models_pb2.LoglikelihoodResult]:
        """log p(continuation | context) per pair (lm-eval `loglikelihood`)."""
        request = models_pb2.LoglikelihoodRequest(
            model=model.encode(),
            bos_mode=bos_mode(bos),
            return_token_logprobs=return_token_logprobs,
            top_k=top_k,
            truncate=truncate,
            max_length=max_length,
            no_cache=no_cache,
        )
        for context, continuation in pairs:
            pair = request.pairs.add()
            if isinstance(context, str) and isinstance(continuation, str):
                pair.context = context.encode()
                pair.continuation = continuation.encode()
            else:
                pair.context_ids.extend(context)
                pair.continuation_ids.extend(continuation)
        return self.score_request(request)

    def score_request(
        self, request: models_pb2.LoglikelihoodRequest
    ) -> List[models_pb2.LoglikelihoodResult]:
        return list(self._call(self._models.Loglikelihood, request).results)

    def rolling(
        self,
        model: str,
        inputs: Iterable[Union[str, Sequence[int]]],
        *,
        bos: Optional[str] = None,
        max_length: int = 0,
        return_token_logprobs: bool = False,
        no_cache: bool = False,
    ) -> List[models_pb2.LoglikelihoodRollingResult]:
        """Log-likelihood of whole texts over lm-eval's rolling windows."""
        request = models_pb2.LoglikelihoodRollingRequest(
            model=model.encode(),
            bos_mode=bos_mode(bos),
            max_length=max_length,
            return_token_logprobs=return_token_logprobs,
            no_cache=no_cache,
        )
        for item in inputs:
            entry = request.inputs.add()
            if isinstance(item, str):
                entry.text = item.encode()
            else:
                entry.ids.extend(item)
        return self.rolling_request(request)

    def rolling_request(
        self, request: models_pb2.LoglikelihoodRollingRequest
    ) -> List[models_pb2.LoglikelihoodRollingResult]:
        return list(self._call(self._models.LoglikelihoodRolling, request).results)

    def generate(
        self,
        model: str,
        prompt: Union[str, Sequence[int]],
        *,
        max_tokens: int = 256,
        until: Sequence[str] = (),
        temperature: float = 0.0,
        top_p: float = 0.0,
        seed: int = 0,
        ignore_eos: bool = False,
        bos: Optional[str] = None,
        no_cache: bool = False,
        on_text: Optional[Callable[[str], None]] = None,
    ) -> Generation:
        """Generates from one prompt; `on_text` sees the text as it streams."""
        request = models_pb2.GenerateRequest(
            model=model.encode(),
            bos_mode=bos_mode(bos),
            max_tokens=max_tokens,
            until=[u.encode() for u in until],
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            ignore_eos=ignore_eos,
            no_cache=no_cache,
        )
        if isinstance(prompt, str):
            request.prompt = prompt.encode()
        else:
            request.prompt_ids.extend(prompt)
        return self.generate_request(request, on_text=on_text)

    def generate_request(
        self,
        request: models_pb2.GenerateRequest,
        on_text: Optional[Callable[[str], None]] = None,
    ) -> Generation:
        text = bytearray()
        result = Generation(text="")
        for chunk in self._stream(self._models.Generate, request):
            text += chunk.text
            result.token_ids.extend(chunk.token_ids)
            if on_text is not None and chunk.text:
                on_text(chunk.text.decode("utf-8", errors="replace"))
            if chunk.finished:
                result.finish_reason = models_pb2.FinishReason.Name(chunk.finish_reason)[
                    len("FINISH_REASON_"):
                ]
                result.prompt_tokens = chunk.prompt_tokens
                result.cached = chunk.cached
        result.text = text.decode("utf-8", errors="replace")
        return result

    # Jobs.

    def submit_job(
        self,
        model: str,
        tasks: Sequence[str],
        *,
        limit: int = 0,
        bos: Optional[str] = None,
        max_length: int = 0,
        log_samples: bool = False,
    ) -> str:
        """Submits an evaluation job (lm-eval tasks); returns its id."""
        request = jobs_pb2.SubmitJobRequest(
            model=model.encode(),
            tasks=[t.encode() for t in tasks],
            limit=limit,
            options=jobs_pb2.JobOptions(
                bos_mode=bos_mode(bos), max_length=max_length, log_samples=log_samples
            ),
        )
        return self._call(self._jobs.SubmitJob, request).job_id

    def watch_job(self, job_id: str) -> Iterator[jobs_pb2.Job]:
        """Yields the job's state as it changes, the last one final (succeeded, failed or
        cancelled) and carrying its results."""
        request = jobs_pb2.WatchJobRequest(job_id=job_id.encode())
        for job in self._stream(self._jobs.WatchJob, request):
            if is_final(job.state):
                yield self._with_results(job)
                return
            yield job

    def get_job(self, job_id: str) -> jobs_pb2.Job:
        job = self._call(self._jobs.GetJob, jobs_pb2.GetJobRequest(job_id=job_id.encode()))
        return self._with_results(job)

    def _with_results(self, job: jobs_pb2.Job) -> jobs_pb2.Job:
        """Results larger than the server's inline limit are left out of Job messages
        (results_bytes says so) and fetched in pieces with GetJobResults."""
        if not is_final(job.state) or job.results_bytes == 0 or job.results_json or job.results_csv:
            return job
        request = jobs_pb2.GetJobRequest(job_id=job.id.encode())
        json_parts, csv_parts = [], []
        for chunk in self._stream(self._jobs.GetJobResults, request):
            json_parts.append(chunk.results_json)
            csv_parts.append(chunk.results_csv)
        results_json, results_csv = b"".join(json_parts), b"".join(csv_parts)
        if len(results_json) + len(results_csv) != job.results_bytes:
            raise RuntimeError(
                f"job {job.id}: received {len(results_json) + len(results_csv)} bytes of "
                f"results, expected {job.results_bytes}"
            )
        job.results_json = results_json.decode()
        job.results_csv = results_csv.decode()
        return job

    def list_jobs(self, limit: int = 0) -> List[jobs_pb2.Job]:
        return list(self._call(self._jobs.ListJobs, jobs_pb2.ListJobsRequest(limit=limit)).jobs)

    def cancel_job(self, job_id: str) -> jobs_pb2.Job:
        return self._call(self._jobs.CancelJob, jobs_pb2.CancelJobRequest(job_id=job_id.encode()))
