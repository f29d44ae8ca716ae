"""The hgeval Python client against a real hgeval-server: every RPC, a job with progress,
bearer auth, errors."""

import json
import math
import unittest

import grpc

import hgeval
from hgeval.v1 import jobs_pb2
from server_process import ServerProcess

MODEL = "hgrn2"


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(["--max_sequence_tokens=96", "--preload=all"])
        cls.client = hgeval.Client(cls.server.address, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_models(self):
        models = self.client.models()
        self.assertEqual([m.name for m in models], [MODEL])
        self.assertEqual(models[0].family, "hgrn2")
        self.assertEqual(models[0].vocab_size, 512)
        self.assertEqual(models[0].max_sequence_tokens, 96)

    def test_tokenize_and_detokenize(self):
        ids = self.client.tokenize(MODEL, "Once upon a time")
        self.assertGreater(len(ids), 1)
        back = self.client.detokenize(MODEL, ids)
        self.assertEqual(back.text.decode(), "Once upon a time")
        self.assertEqual(b"".join(back.token_texts), back.text)
        self.assertEqual(len(back.pieces), len(ids))
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.detokenize(MODEL, [1, 100000])
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("outside the vocabulary", caught.exception.message)

    def test_score(self):
        pairs = [("Once upon a", " time"), ("The cat sat on the", " mat")]
        results = self.client.score(MODEL, pairs, return_token_logprobs=True, top_k=2, no_cache=True)
        self.assertEqual(len(results), 2)
        for r in results:
            self.assertLess(r.logprob, 0)
            self.assertEqual(len(r.token_logprobs), r.continuation_tokens)
            self.assertEqual(len(r.top_k), r.continuation_tokens)
            # The engine sums the float per-token values in double, in order.
            total = 0.0
            for lp in r.token_logprobs:
                total += lp
            self.assertEqual(total, r.logprob)
            self.assertFalse(r.cached)
        # The same pairs as token ids: context ids from Tokenize, the continuation the
        # server reported.
        context_ids = self.client.tokenize(MODEL, "Once upon a", add_special=True)
        by_ids = self.client.score(MODEL, [(context_ids, list(results[0].continuation_ids))])
        self.assertEqual(by_ids[0].logprob, results[0].logprob)
        again = self.client.score(MODEL, pairs, return_token_logprobs=True, top_k=2)
        self.assertTrue(all(r.cached for r in again))
        self.assertEqual([r.logprob for r in again], [r.logprob for r in results])

    def test_rolling(self):
        text = "Once upon a time, there was a little girl named Lily. She loved to play outside."
        whole = self.client.rolling(MODEL, [text], return_token_logprobs=True, no_cache=True)[0]
        windows = self.client.rolling(MODEL, [text], max_length=8, no_cache=True)[0]
        self.assertEqual(whole.windows, 1)
        self.assertGreater(windows.windows, 1)
        self.assertEqual(whole.tokens, windows.tokens)
        self.assertEqual(len(whole.token_logprobs), whole.tokens)
        self.assertTrue(math.isfinite(windows.logprob) and windows.logprob < 0)

    def test_generate(self):
        streamed = []
        first = self.client.generate(MODEL, "Once upon a time", max_tokens=12, on_text=streamed.append, no_cache=True)
        self.assertEqual("".join(streamed), first.text)
        self.assertEqual(len(first.token_ids), 12)
        self.assertEqual(first.finish_reason, "LENGTH")
        second = self.client.generate(MODEL, "Once upon a time", max_tokens=12)
        self.assertEqual(second.text, first.text)  # greedy, and answered from the store
        self.assertTrue(second.cached)
        # A stop string cuts the text before it.
        if len(first.text) > 2:
            stop = first.text[2:4] if first.text[2:4].strip() else first.text[2]
            stopped = self.client.generate(MODEL, "Once upon a time", max_tokens=12, until=[stop])
            self.assertNotIn(stop, stopped.text)
            self.assertEqual(stopped.finish_reason, "STOP_STRING")
        sampled = [
            self.client.generate(MODEL, "Once", max_tokens=8, temperature=1.0, seed=7).text
            for _ in range(2)
        ]
        self.assertEqual(sampled[0], sampled[1])  # the same seed, the same tokens

    def test_errors_carry_the_status(self):
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.score("nope", [("a", "b")])
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)
        self.assertIn("unknown model 'nope'", caught.exception.message)
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.score(MODEL, [("a", "")])
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.generate(MODEL, "x", max_tokens=200)
        self.assertEqual(caught.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
        with self.assertRaises(ValueError):
            self.client.score(MODEL, [("a", "b")], bos="sometimes")

    def test_job_with_progress(self):
        job_id = self.client.submit_job(MODEL, ["piqa"], limit=6, bos="none")
        updates = list(self.client.watch_job(job_id))
        final = updates[-1]
        self.assertGreaterEqual(len(updates), 2)  # the job's state before it finished, then after
        self.assertIn(updates[0].state, (jobs_pb2.JOB_STATE_QUEUED, jobs_pb2.JOB_STATE_RUNNING))
        self.assertEqual(final.state, jobs_pb2.JOB_STATE_SUCCEEDED, final.error)
        self.assertGreater(final.requests_total, 0)
        self.assertEqual(final.requests_done, final.requests_total)
        done = [u.requests_done for u in updates]
        self.assertEqual(done, sorted(done))  # progress only moves forward
        self.assertEqual(final.results[0].task, "piqa")
        self.assertEqual(final.results[0].samples, 6)
        self.assertIn("acc,none", final.results[0].metrics)
        self.assertEqual(self.client.get_job(job_id).state, jobs_pb2.JOB_STATE_SUCCEEDED)
        self.assertIn(job_id, [j.id for j in self.client.list_jobs()])
        # A finished job cannot be cancelled.
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.cancel_job(job_id)
        self.assertEqual(caught.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
        with self.assertRaises(hgeval.HgevalError) as caught:
            self.client.get_job("no-such-job")
        self.assertEqual(caught.exception.code, grpc.StatusCode.NOT_FOUND)


class LargeResultsTest(unittest.TestCase):
    """Results over the server's inline limit are left out of Job messages and fetched in
    pieces: watch_job and get_job return them whole."""

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(["--max_inline_results_bytes=2048"])
        cls.client = hgeval.Client(cls.server.address, timeout=120)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.stop()

    def test_results_over_the_inline_limit_arrive_whole(self):
        job_id = self.client.submit_job(MODEL, ["arc_easy"], limit=4, bos="none", log_samples=True)
        final = list(self.client.watch_job(job_id))[-1]
        self.assertEqual(final.state, jobs_pb2.JOB_STATE_SUCCEEDED, final.error)
        self.assertGreater(final.results_bytes, 2048)
        self.assertEqual(len(final.results_json.encode()), final.results_bytes)
        self.assertEqual(len(json.loads(final.results_json)["samples"]["arc_easy"]), 4)
        self.assertEqual(self.client.get_job(job_id).results_json, final.results_json)


class AuthTest(unittest.TestCase):
    def test_bearer_token(self):
        server = ServerProcess(token="s3cret")
        try:
            for token in (None, "wrong"):
                with hgeval.Client(server.address, token=token) as client:
                    with self.assertRaises(hgeval.HgevalError) as caught:
                        client.models()
                    self.assertEqual(caught.exception.code, grpc.StatusCode.UNAUTHENTICATED)
            with hgeval.Client(server.address, token="s3cret") as client:
                self.assertEqual([m.name for m in client.models()], [MODEL])
                self.assertTrue(client.generate(MODEL, "Once", max_tokens=2).token_ids)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
