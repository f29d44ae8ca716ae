#!/usr/bin/python3
"""Reference side of the MQAR parity tests: zoology's multiquery_ar algorithm (with
random_non_queries=False) and a few numpy legacy-RandomState calls, run in numpy.

Written for hgeval from the algorithm's description; it reads numpy's global legacy
stream exactly as zoology does (np.random.seed, np.random.choice per row in example
order, keys then values then gaps), so its output is what zoology produces.

  mqar_reference.py examples SEED L K V N POWER_A   int64 inputs [N, L] then labels [N, L]
                                                     (little-endian) on stdout
  mqar_reference.py seeds DATA_SEED N_TRAIN N_TEST   zoology prepare_data test seeds
  mqar_reference.py rng                              JSON of legacy RandomState draws
"""
import json
import sys

import numpy as np


def mqar_examples(seed, seq_len, num_pairs, vocab, count, power_a):
    np.random.seed(seed)
    half = vocab // 2
    key_pool = np.arange(1, half)
    value_pool = np.arange(half, vocab)
    # One choice call per example row, in row order, for keys, then values, then gaps.
    keys = np.stack([np.random.choice(key_pool, size=num_pairs, replace=False)
                     for _ in range(count)])
    values = np.stack([np.random.choice(value_pool, size=num_pairs, replace=False)
                       for _ in range(count)])
    slots = (seq_len - 2 * num_pairs) // 2
    weights = power_a * np.arange(1, slots + 1) ** (power_a - 1)
    weights = weights / weights.sum()
    slot_pool = np.arange(slots, dtype=int)
    gaps = np.stack([np.random.choice(slot_pool, size=num_pairs, replace=False, p=weights)
                     for _ in range(count)])

    inputs = np.zeros((count, seq_len), dtype=np.int64)
    labels = np.full((count, seq_len), -100, dtype=np.int64)
    inputs[:, 0:2 * num_pairs:2] = keys
    inputs[:, 1:2 * num_pairs:2] = values
    query_pos = 2 * num_pairs + 2 * gaps
    rows = np.arange(count)[:, None]
    inputs[rows, query_pos] = keys
    labels[rows, query_pos] = values
    return inputs, labels


def zoology_test_seeds(data_seed, num_train, num_test):
    np.random.seed(data_seed)
    np.random.randint(0, 2**31, size=num_train)
    return np.random.randint(2**31, 2**32, size=num_test)


def rng_draws():
    out = {}
    rs = np.random.RandomState(12345)
    out["random_sample"] = [float(x).hex() for x in rs.random_sample(5)]
    out["randint_0_10"] = [int(x) for x in rs.randint(0, 10, size=20)]
    out["randint_5_6"] = [int(x) for x in rs.randint(5, 6, size=3)]
    out["randint_wide"] = [int(x) for x in rs.randint(-3, 2**32 - 3, size=4)]
    out["permutation_10"] = [int(x) for x in rs.permutation(10)]
    out["choice_replace"] = [int(x) for x in rs.choice(7, size=6, replace=True)]
    p = np.array([0.1, 0.0, 0.3, 0.2, 0.05, 0.25, 0.1])
    out["choice_replace_p"] = [int(x) for x in rs.choice(7, size=8, replace=True, p=p)]
    out["choice_noreplace"] = [int(x) for x in rs.choice(7, size=3, replace=False)]
    out["choice_noreplace_p"] = [int(x) for x in rs.choice(7, size=5, replace=False, p=p)]
    out["after"] = [float(x).hex() for x in rs.random_sample(2)]
    out["seed_max"] = [float(x).hex() for x in np.random.RandomState(2**32 - 1).random_sample(3)]
    out["seed_array"] = [int(x) for x in np.random.RandomState([1, 2, 3]).randint(0, 2**31,
                                                                                   size=4)]
    return out


def main(argv):
    if len(argv) == 8 and argv[1] == "examples":
        seed, seq_len, num_pairs, vocab, count = (int(a) for a in argv[2:7])
        inputs, labels = mqar_examples(seed, seq_len, num_pairs, vocab, count, float(argv[7]))
        sys.stdout.buffer.write(inputs.astype("<i8").tobytes())
        sys.stdout.buffer.write(labels.astype("<i8").tobytes())
        return 0
    if len(argv) == 5 and argv[1] == "seeds":
        for s in zoology_test_seeds(*(int(a) for a in argv[2:5])):
            print(int(s))
        return 0
    if len(argv) == 2 and argv[1] == "rng":
        print(json.dumps(rng_draws()))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
