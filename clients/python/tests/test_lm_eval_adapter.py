"""The lm-eval adapter: its mapping of lm-eval's three request shapes (loglikelihood,
loglikelihood_rolling, generate_until) onto the RPCs, and the `hgeval` model class run
against a real server. lm_eval is not installed here: a stand-in for its two imports
(`LM` and `register_model`) lets the class be defined and driven as lm-eval drives it."""

import importlib
import sys
import types
import unittest

from hgeval import lm_eval_adapter
from hgeval.v1 import models_pb2
from server_process import ServerProcess

MODEL = "hgrn2"
PAIRS = [("Question: what did the cat do?\nAnswer:", " it sat on the mat"), ("", "Lily")]
TEXTS = ["Once upon a time, there was a little girl named Lily. She loved to play outside."]
GEN = ("Once upon a time", {"until": ["\n\n", "."], "max_gen_toks": 10, "do_sample": False})


class MappingTest(unittest.TestCase):
    def test_loglikelihood(self):
        r = lm_eval_adapter.loglikelihood_request(MODEL, PAIRS, bos="none", max_length=2048)
        self.assertEqual(r.model, b"hgrn2")
        self.assertEqual(r.bos_mode, models_pb2.BOS_MODE_NONE)
        self.assertTrue(r.truncate)  # lm-eval left-truncates over-long pairs
        self.assertEqual(r.max_length, 2048)
        self.assertEqual([(p.context.decode(), p.continuation.decode()) for p in r.pairs], PAIRS)

    def test_rolling(self):
        r = lm_eval_adapter.rolling_request(MODEL, TEXTS, bos=None, max_length=64)
        self.assertEqual(r.bos_mode, models_pb2.BOS_MODE_UNSPECIFIED)  # the server's default
        self.assertEqual(r.max_length, 64)
        self.assertEqual([i.text.decode() for i in r.inputs], TEXTS)

    def test_generate_until(self):
        r = lm_eval_adapter.generate_request(MODEL, GEN[0], GEN[1], bos=None)
        self.assertEqual(r.prompt, b"Once upon a time")
        self.assertEqual(list(r.until), [b"\n\n", b"."])
        self.assertEqual(r.max_tokens, 10)
        self.assertEqual(r.temperature, 0.0)  # greedy
        self.assertTrue(r.lm_eval)  # prepared as lm-eval's generate_until
        self.assertEqual(r.max_length, 0)  # the model's lm_eval_max_length
        r = lm_eval_adapter.generate_request(MODEL, "x", {}, bos=None, max_length=512)
        self.assertEqual(r.max_length, 512)
        r = lm_eval_adapter.generate_request(MODEL, "x", {"until": "\n"}, bos=None)
        self.assertEqual(list(r.until), [b"\n"])
        self.assertEqual(r.max_tokens, lm_eval_adapter.DEFAULT_MAX_GEN_TOKS)
        r = lm_eval_adapter.generate_request(MODEL, "x", {"temperature": 0.7}, bos=None, seed=5)
        self.assertAlmostEqual(r.temperature, 0.7, places=6)  # sampling, as HF decides
        self.assertEqual(r.seed, 5)
        r = lm_eval_adapter.generate_request(MODEL, "x", {"do_sample": True}, bos=None)
        self.assertEqual(r.temperature, 1.0)
        r = lm_eval_adapter.generate_request(
            MODEL, "x", {"do_sample": False, "temperature": 0.7}, bos=None
        )
        self.assertEqual(r.temperature, 0.0)
        with self.assertRaisesRegex(ValueError, "num_beams"):
            lm_eval_adapter.generate_request(MODEL, "x", {"num_beams": 4}, bos=None)
        with self.assertRaises(ValueError):
            lm_eval_adapter.generate_request(MODEL, "x", {}, bos="sometimes")


class Instance:
    """lm-eval's Instance as the model sees it: `args`."""

    def __init__(self, *args):
        self.args = args


def load_adapter_with_lm_eval_stand_in():
    registry = {}
    lm_eval = types.ModuleType("lm_eval")
    api = types.ModuleType("lm_eval.api")
    model = types.ModuleType("lm_eval.api.model")
    reg = types.ModuleType("lm_eval.api.registry")

    class LM:
        def __init__(self):
            pass

    def register_model(name):
        def add(cls):
            registry[name] = cls
            return cls

        return add

    model.LM = LM
    reg.register_model = register_model
    modules = {"lm_eval": lm_eval, "lm_eval.api": api, "lm_eval.api.model": model,
               "lm_eval.api.registry": reg}
    saved = {k: sys.modules.get(k) for k in modules}
    sys.modules.update(modules)
    try:
        importlib.reload(lm_eval_adapter)
    finally:
        for k, v in saved.items():
            if v is None:
                del sys.modules[k]
            else:
                sys.modules[k] = v
    return registry


class AdapterAgainstServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(["--preload=all"])
        cls.registry = load_adapter_with_lm_eval_stand_in()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        importlib.reload(lm_eval_adapter)

    def test_the_three_request_shapes(self):
        self.assertIn("hgeval", self.registry)
        lm = self.registry["hgeval"](server=self.server.address, model=MODEL, bos="none",
                                     batch_size="1", device="cpu")
        self.assertEqual(lm.max_length, 2048)  # ModelInfo.lm_eval_max_length of the model
        client = lm.client

        got = lm.loglikelihood([Instance(*p) for p in PAIRS])
        want = client.score(MODEL, PAIRS, bos="none", truncate=True, max_length=2048)
        self.assertEqual(got, [(r.logprob, r.is_greedy) for r in want])

        got = lm.loglikelihood_rolling([Instance(t) for t in TEXTS])
        want = client.rolling(MODEL, TEXTS, bos="none", max_length=2048)
        self.assertEqual(got, [r.logprob for r in want])

        got = lm.generate_until([Instance(*GEN)])
        want = client.generate(MODEL, GEN[0], max_tokens=10, until=["\n\n", "."], bos="none")
        self.assertEqual(got, [want.text])
        self.assertNotIn(".", got[0])


if __name__ == "__main__":
    unittest.main()
