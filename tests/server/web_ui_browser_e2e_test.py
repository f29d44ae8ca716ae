#!/usr/bin/env python3
"""The web UI (/ui, issue 36) in a real browser: Debian's headless chromium driven through
chromedriver (python3-selenium), against a real hgeval-server on the CPU with the bundled
model data/models/stories260K and real jobs.

Default mode checks: unauthenticated pages and data are refused (token on); the login page
sets the cookie; the jobs list updates while a job runs and its cancel button cancels;
the results table's numbers equal the job's results JSON (and the downloads); the compare
view's deltas; the NIAH page draws one cell per (length, depth) with hover text and the
paper's metrics; the samples page shows known samples, filters and pages.

--page_speed: a 10,306-sample job (lambada_openai + lambada_standard, every doc, samples
logged); each page of it is loaded in the browser and its Navigation Timing and time to
drawn are measured; every page must be drawn within 1 s. --report writes the numbers.

--screenshots DIR saves a PNG of each page (docs/web/ holds the committed ones).

Exit 77 (ctest's skip) with the reason printed when chromium or chromedriver is absent
(after the refusals, which need no browser, have been checked); any other missing piece
is a failure.
"""
import argparse
import gzip
import http.cookiejar
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
# With ';' and ',', which a cookie cannot hold as they are (it holds the token in hex).
TOKEN = "web-ui;test,token"


def find_browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        missing = [name for name, path in (("chromium", chromium), ("chromedriver", driver))
                   if path is None]
        print(f"SKIP web_ui_browser_e2e_test: {' and '.join(missing)} not found on PATH "
              "(Debian packages chromium and chromium-driver; scripts/install_deps.sh "
              "installs them)", flush=True)
        sys.exit(SKIP)
    return chromium, driver


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


class Server:
    def __init__(self, args, work):
        self.work = work
        token_file = os.path.join(work, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN)
        self.log = open(os.path.join(work, "server.log"), "w")
        self.process = subprocess.Popen(
            [args.server, f"--model_root={args.source_dir}/data/models",
             f"--data_dir={args.source_dir}/data", "--listen=127.0.0.1:0",
             f"--port_file={work}/port", "--http_listen=127.0.0.1:0",
             f"--http_port_file={work}/http_port", f"--store={work}/store.sqlite",
             f"--auth_token_file={token_file}",
             # The golden checkpoints (tokenizer-less folders) for the series page.
             f"--tokenizer={args.source_dir}/data/models/stories260K/tok512.bin",
             "--model=" + ",".join(f"golden_{m}={args.source_dir}/tests/golden/{m}"
                                   for m in SERIES_MODELS)],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            if all(os.path.exists(f"{work}/{n}") and open(f"{work}/{n}").read().strip()
                   for n in ("port", "http_port")):
                break
            check(self.process.poll() is None, "the server exited at start")
            time.sleep(0.1)
        self.grpc = "127.0.0.1:" + open(f"{work}/port").read().strip()
        self.base = "http://127.0.0.1:" + open(f"{work}/http_port").read().strip()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()


def client(args, server, *command, background=False):
    argv = [args.client, *command, f"--server={server.grpc}", f"--token={TOKEN}",
            "--noprogress"]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    check(done.returncode == 0, f"{' '.join(argv)} failed: {done.stdout.decode()[-2000:]}")
    return done.stdout.decode()


def http(url, method="GET", data=None, headers=None):
    """(status, headers, body) of a request made without the browser."""
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def start_browser(chromium, driver_path):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:
        raise Failure(f"chromium is here but Python's selenium is not ({error}): install "
                      "python3-selenium (scripts/install_deps.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--window-size=1360,900"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(driver_path), options=options)


def wait_for(predicate, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise Failure(f"timed out after {seconds} s waiting for {what}")


def open_page(browser, url):
    browser.get(url)
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 30,
             f"{url} to be drawn")
    errors = browser.find_elements("id", "error")
    check(not errors, f"{url} shows an error: {errors[0].text if errors else ''}")


def screenshot(browser, args, name):
    if args.screenshots:
        os.makedirs(args.screenshots, exist_ok=True)
        # The whole page, not just the window.
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1360, max(500, min(int(height) + 20, 1600)))
        browser.save_screenshot(os.path.join(args.screenshots, name))
        browser.set_window_size(1360, 900)


def login(browser, server, args):
    browser.get(server.base + "/ui")
    token_box = wait_for(lambda: browser.find_elements("id", "token"), 10, "the login form")[0]
    screenshot(browser, args, "login.png")
    token_box.send_keys(TOKEN)
    browser.find_element("css selector", "#login button").click()
    wait_for(lambda: browser.execute_script("return document.body.dataset.ready === '1'"), 30,
             "the jobs page after login")
    check(browser.execute_script("return location.pathname") == "/ui", "login did not return to /ui")
    cookies = {c["name"]: c for c in browser.get_cookies()}
    check("hgeval_ui_token" in cookies and cookies["hgeval_ui_token"].get("httpOnly") and
          cookies["hgeval_ui_token"]["value"] == TOKEN.encode().hex(),
          f"login set no HttpOnly cookie holding the token in hex: {cookies}")
    return cookies["hgeval_ui_token"]["value"]


def check_refusals(server):
    """Without the token nothing but the login page answers."""
    for path in ("/ui", "/ui/", "/ui/results?id=x", "/ui/niah?id=x", "/ui/samples?id=x",
                 "/ui/app.js", "/ui/api/jobs", "/ui/api/job?id=x", "/ui/api/samples?id=x",
                 "/ui/api/results.json?id=x", "/ui/api/results.csv?id=x"):
        for headers in ({}, {"Authorization": "Bearer wrong"},
                        {"Cookie": "hgeval_ui_token=" + b"wrong".hex()},
                        {"Cookie": "hgeval_ui_token=" + TOKEN}):
            status, _, body = http(server.base + path, headers=headers)
            check(status == 401, f"GET {path} with {headers or 'no token'} answered {status}")
            if not path.startswith("/ui/api/") and path != "/ui/app.js":
                check(b'name="token"' in body, f"GET {path} without a token shows no login form")
    status, _, _ = http(server.base + "/ui/api/cancel?id=x", method="POST", data=b"",
                        headers={"X-Hgeval-UI": "1"})
    check(status == 401, f"POST /ui/api/cancel without a token answered {status}")
    status, headers, _ = http(server.base + "/ui/login", method="POST",
                              data=b"token=wrong&next=/ui",
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    check(status == 401 and headers.get("Set-Cookie") is None,
          f"a wrong token at /ui/login answered {status} with cookie {headers.get('Set-Cookie')}")
    # With the token: data answers; a cancel without the UI header is refused (CSRF).
    bearer = {"Authorization": "Bearer " + TOKEN}
    status, _, _ = http(server.base + "/ui/api/jobs", headers=bearer)
    check(status == 200, f"GET /ui/api/jobs with the token answered {status}")
    status, _, _ = http(server.base + "/ui/api/cancel?id=x", method="POST", data=b"",
                        headers=bearer)
    check(status == 403, f"a cancel without X-Hgeval-UI answered {status}, not 403")
    print("ok: unauthenticated pages and data refused (401), login form shown", flush=True)


def job_id_of(results_path):
    with open(results_path) as f:
        return json.load(f)["hgeval_job"]["id"]


def row_of(browser, job_id):
    return browser.execute_script(
        "const r = document.querySelector(`tr.job[data-id='${arguments[0]}']`);"
        "return r ? [r.dataset.state, r.querySelector('.progress').textContent] : null;", job_id)


def check_jobs_live(browser, server, args, work):
    open_page(browser, server.base + "/ui")
    browser.execute_script("window.__noReload = 1;")
    polls_before = int(browser.execute_script("return document.body.dataset.polls"))
    results_path = os.path.join(work, "live.json")
    run = client(args, server, "run", "--model=stories260K", "--tasks=hellaswag",
                 "--limit=1000", "--log_samples", f"--output={results_path}", background=True)
    seen = []
    shot = False
    deadline = time.time() + 600
    while time.time() < deadline and run.poll() is None:
        rows = browser.execute_script(
            "return [...document.querySelectorAll('tr.job')].map(r => [r.dataset.id, "
            "r.dataset.state, r.querySelector('.progress').textContent, "
            "r.querySelector('.eta').textContent]);")
        for row in rows:
            if row[1] == "running" and (not seen or seen[-1] != row):
                seen.append(row)
                if not shot and " 0 / " not in row[2]:
                    screenshot(browser, args, "jobs.png")
                    shot = True
        time.sleep(0.2)
    output = run.communicate()[0].decode()
    check(run.returncode == 0, f"hgeval run failed: {output[-2000:]}")
    job_id = job_id_of(results_path)
    wait_for(lambda: (row_of(browser, job_id) or [""])[0] == "succeeded", 10,
             "the job's row to say succeeded")
    done = [int(r[2].split("/")[0]) for r in seen if r[0] == job_id]
    check(len(set(done)) >= 2 and all(a <= b for a, b in zip(done, done[1:])),
          f"the running row's progress did not advance while the page stayed open: {seen}")
    check(browser.execute_script("return window.__noReload === 1"), "the jobs page reloaded")
    final = row_of(browser, job_id)
    check(final[1].strip().startswith("4000 / 4000"), f"final progress {final}")
    polls = int(browser.execute_script("return document.body.dataset.polls"))
    check(polls > polls_before, "the jobs page never polled")
    print(f"ok: jobs list updated live: {len(set(done))} progress values seen while running "
          f"({done[0]} .. {done[-1]} of 4000), then succeeded, without a reload", flush=True)

    # Cancel from the page: a job long enough to be running when the button is pressed.
    long_run = client(args, server, "run", "--model=stories260K", "--tasks=hellaswag",
                      "--limit=9000", f"--output={work}/cancelled.json", background=True)
    # Found and pressed in one script: the list is redrawn every second.
    cancelled_id = wait_for(lambda: browser.execute_script(
        "const b = document.querySelector(\"tr.job[data-state='running'] button.cancel\");"
        "if (!b) return null; b.click(); return b.closest('tr').dataset.id;"), 60,
        "a running job's cancel button")
    wait_for(lambda: (row_of(browser, cancelled_id) or [""])[0] == "cancelled", 30,
             "the cancelled job's row")
    long_run.wait(timeout=60)
    print(f"ok: the cancel button cancelled {cancelled_id}", flush=True)
    return job_id, results_path


def check_results(browser, server, args, job_id, results_path, cookie):
    with open(results_path) as f:
        expected = json.load(f)
    open_page(browser, server.base + "/ui/results?id=" + job_id)
    rows = browser.execute_script(
        "return [...document.querySelectorAll('#results-table tbody tr')].map(r => ({"
        "task: r.dataset.task, metric: r.dataset.metric, filter: r.dataset.filter,"
        "value: r.querySelector('.value').dataset.value, value_text: r.querySelector('.value').textContent,"
        "stderr: r.querySelector('.stderr').dataset.value, stderr_text: r.querySelector('.stderr').textContent}))")
    want = sum(1 for task, entries in expected["results"].items()
               for key in entries if key != "alias" and "_stderr," not in key)
    check(len(rows) == want, f"the table has {len(rows)} rows, the results JSON {want} metrics")
    for row in rows:
        entries = expected["results"][row["task"]]
        key = row["metric"] + "," + row["filter"]
        value = entries[key]
        check(float(row["value"]) == value, f"{row['task']} {key}: page {row['value']} != {value}")
        check(row["value_text"] == f"{value:.4f}", f"{key}: shown {row['value_text']}")
        se = entries[row["metric"] + "_stderr," + row["filter"]]
        check(float(row["stderr"]) == se, f"{row['task']} {key} stderr: {row['stderr']} != {se}")
        check(row["stderr_text"] == f"{se:.4f}", f"{key} stderr shown {row['stderr_text']}")
    screenshot(browser, args, "results.png")
    headers = {"Cookie": "hgeval_ui_token=" + cookie}
    status, _, body = http(f"{server.base}/ui/api/results.json?id={job_id}", headers=headers)
    check(status == 200 and json.loads(body)["results"] == expected["results"],
          "the JSON download differs from the job's results JSON")
    status, _, body = http(f"{server.base}/ui/api/results.csv?id={job_id}", headers=headers)
    lines = body.decode().strip().split("\n")
    check(status == 200 and len(lines) == want + 1, f"the CSV download has {len(lines)} lines")
    for line in lines[1:]:
        _, task, filt, _, metric, value, se = line.split(",")
        check(float(value) == expected["results"][task][f"{metric},{filt}"], f"CSV {line}")
    print(f"ok: results table: {len(rows)} rows equal the job's results JSON; JSON and CSV "
          "downloads equal it too", flush=True)


def check_compare(browser, server, args, work, first_id, first_path):
    second_path = os.path.join(work, "second.json")
    client(args, server, "run", "--model=stories260K", "--tasks=hellaswag", "--limit=300",
           f"--output={second_path}")
    second_id = job_id_of(second_path)
    with open(first_path) as f:
        first = json.load(f)["results"]["hellaswag"]
    with open(second_path) as f:
        second = json.load(f)["results"]["hellaswag"]
    open_page(browser, f"{server.base}/ui/compare?ids={first_id},{second_id}")
    delta = browser.execute_script(
        "const r = document.querySelector(\"#compare-table tr[data-metric='acc']\");"
        "return r ? r.querySelector('.delta').textContent : document.body.innerText;")
    want = second["acc,none"] - first["acc,none"]
    check(delta.startswith(f"{'+' if want >= 0 else ''}{want:.4f}"),
          f"compare delta '{delta}' is not {want:.4f}")
    screenshot(browser, args, "compare.png")
    print(f"ok: compare view: acc delta {delta}", flush=True)


def check_niah(browser, server, args, work):
    out = os.path.join(work, "niah")
    client(args, server, "niah", "--model=stories260K", "--mode=easy",
           "--lengths=300,350,400,450,500", "--depths=0,25,50,75", f"--output_dir={out}")
    with open(os.path.join(out, "niah_results.json")) as f:
        niah = json.load(f)
    jobs = json.loads(http(server.base + "/ui/api/jobs",
                           headers={"Authorization": "Bearer " + TOKEN})[2])["jobs"]
    niah_id = next(j["id"] for j in jobs if j["kind"] == "niah")
    open_page(browser, server.base + "/ui/niah?id=" + niah_id)
    cells = browser.find_elements("css selector", "#heatmap rect.cell")
    want = len(niah["grid"]["lengths"]) * len(niah["grid"]["depths"])
    check(len(cells) == want == 20, f"the heatmap has {len(cells)} cells, the grid {want}")
    for cell in cells:
        length = int(cell.get_attribute("data-length"))
        depth = float(cell.get_attribute("data-depth"))
        l = niah["grid"]["lengths"].index(length)
        d = niah["grid"]["depths"].index(depth)
        score = niah["grid"]["scores"][l][d]
        check(float(cell.get_attribute("data-score")) == score, f"cell {length}/{depth}")
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(browser).move_to_element(cells[-1]).perform()
    tooltip = wait_for(lambda: browser.execute_script(
        "const t = document.getElementById('tooltip');"
        "return t.style.display === 'block' ? t.textContent : '';"), 5, "the hover text")
    check("length 500 · depth 75%" in tooltip and "score" in tooltip, f"hover text: {tooltip}")
    shown = float(browser.find_element(
        "css selector", "#niah-metrics td[data-value]").get_attribute("data-value"))
    check(shown == niah["metrics"]["weighted_average_accuracy"], "weighted average accuracy")
    screenshot(browser, args, "niah.png")
    print(f"ok: NIAH heatmap: {len(cells)} cells with the grid's scores, hover text, the "
          "paper's metrics", flush=True)


SERIES_MODELS = ("llama", "hgrn2", "gla", "mamba")


def check_series(browser, server, args, work):
    """A series of four checkpoints, two architectures: the page draws one fitted line per
    architecture through its points, and the data route's fits are the sweep's own."""
    series_file = os.path.join(work, "web-series.json")
    checkpoints = []
    for i, m in enumerate(SERIES_MODELS):
        n, d = 1e5 * (1 + i % 2) * 3, 1e6 * (1 + i % 2) * 5
        checkpoints.append({"model": f"golden_{m}", "architecture": "arch_a" if i < 2 else "arch_b",
                            "parameters": n * (1 + i), "tokens": d})
    with open(series_file, "w") as f:
        json.dump({"checkpoints": checkpoints}, f)
    out = os.path.join(work, "series-out")
    client(args, server, "sweep", f"--series={series_file}", "--tasks=pd_english_heldout",
           "--limit=2", f"--output_dir={out}")
    with open(os.path.join(out, "series_results.json")) as f:
        report = json.load(f)
    auth = {"Authorization": "Bearer " + TOKEN}
    listed = json.loads(http(server.base + "/ui/api/series", headers=auth)[2])["series"]
    check(len(listed) == 1 and listed[0]["name"] == "web-series" and listed[0]["checkpoints"] == 4,
          f"the series list: {listed}")
    series_id = listed[0]["id"]
    curves = json.loads(http(server.base + "/ui/api/series_curves?id=" + series_id,
                             headers=auth)[2])
    check(curves["metric"] == report["fit_metric"], f"default metric {curves['metric']}")
    for a in curves["architectures"]:
        want = report["fits"][a["architecture"]]["loss_vs_compute"]
        check(a["fit"] == want, f"{a['architecture']}: route fit {a['fit']} != sweep's {want}")
    open_page(browser, server.base + "/ui/series")
    link = browser.find_element("css selector", "#series-list a")
    check(link.text == "web-series", f"series list link: {link.text}")
    open_page(browser, server.base + "/ui/series?id=" + series_id)
    lines = browser.find_elements("css selector", "#series-chart line.fit")
    points = browser.find_elements("css selector", "#series-chart circle.point")
    check(sorted(l.get_attribute("data-architecture") for l in lines) == ["arch_a", "arch_b"],
          f"{len(lines)} fitted lines")
    check(len(points) == 4, f"{len(points)} points drawn, the series has 4")
    rows = browser.find_elements("css selector", "#series-points tr.series-point")
    check(len(rows) == 4 and all("succeeded" in r.text for r in rows), "the checkpoints table")
    legend = browser.find_element("css selector", "#series-legend").text
    b = report["fits"]["arch_a"]["loss_vs_compute"]["b"]
    check(f"C^{b:.4f}" in legend, f"the legend shows the exponent {b:.4f}: {legend}")
    screenshot(browser, args, "series-golden.png")  # docs/web/series.png: the demonstration series
    print(f"ok: series page: 2 fitted lines, 4 points, fits equal to the sweep's "
          f"(arch_a exponent {b:.4f})", flush=True)


def check_samples(browser, server, args, job_id, results_path):
    with open(results_path) as f:
        samples = json.load(f)["samples"]["hellaswag"]
    with gzip.open(os.path.join(args.source_dir, "data/hellaswag/validation_preprocessed.jsonl.gz"),
                   "rt") as f:
        doc0 = json.loads(f.readline())
    base = f"{server.base}/ui/samples?id={job_id}&task=hellaswag"
    open_page(browser, base)
    cards = browser.find_elements("css selector", ".sample")
    check(len(cards) == 20, f"{len(cards)} samples on the first page, not 20")
    first = cards[0]
    check(first.get_attribute("data-doc-id") == "0", "the first sample is not doc 0")
    contexts = [e.text for e in first.find_elements("css selector", ".context")]
    # The job's record of doc 0, and the dataset's doc 0 (lm-eval's hellaswag preprocessing
    # capitalises the second half of the query).
    # The four choices share the context, shown once.
    check(contexts == [samples[0]["arguments"][0][0]] and
          all(a[0] == contexts[0] for a in samples[0]["arguments"]),
          f"doc 0's context {contexts} is not the job's {samples[0]['arguments']}")
    check(all(doc0["query"].lower() == c.lower() for c in contexts),
          f"doc 0's contexts {contexts} are not the dataset's query {doc0['query']!r}")
    continuations = [e.text for e in first.find_elements("css selector", ".continuation")]
    check(continuations == [json.dumps(" " + c, ensure_ascii=False) for c in doc0["choices"]],
          f"doc 0's continuations {continuations}")
    screenshot(browser, args, "samples.png")
    open_page(browser, base + "&page=3&page_size=10")
    ids = [c.get_attribute("data-doc-id") for c in browser.find_elements("css selector", ".sample")]
    check(ids == [str(i) for i in range(30, 40)], f"page 4 of 10 shows docs {ids}")
    # Filters: text, then a metric's value.
    # A query that is plain ASCII without quotes reads the same in the record's JSON text.
    doc = next(i for i in range(123, len(samples)) if all(
        32 <= ord(c) < 127 and c not in "\\\"" for c in samples[i]["doc"]["query"]))
    needle = samples[doc]["doc"]["query"]
    open_page(browser, base + "&q=" + urllib.request.quote(needle))
    ids = [c.get_attribute("data-doc-id") for c in browser.find_elements("css selector", ".sample")]
    check(str(doc) in ids, f"filtering on doc {doc}'s query shows {ids}")
    correct = sum(1 for s in samples if s["acc"] == 1)
    open_page(browser, base + "&metric=acc&value=1&page_size=100")
    info = browser.find_element("id", "page-info").text
    check(f"{correct} of {len(samples)} samples" in info, f"acc=1 filter: {info}, want {correct}")
    print(f"ok: samples: doc 0 as in the dataset, paging, text filter, acc=1 filter "
          f"({correct} of {len(samples)})", flush=True)


def navigation_timing(browser):
    return browser.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "const r = performance.getEntriesByType('resource');"
        "return {response_end_ms: n.responseEnd, dom_content_loaded_ms: n.domContentLoadedEventEnd,"
        " load_ms: n.loadEventEnd, drawn_ms: Number(document.body.dataset.readyMs),"
        " bytes: n.encodedBodySize + r.reduce((s, e) => s + e.encodedBodySize, 0),"
        " requests: 1 + r.length};")


def check_page_speed(browser, server, args, work):
    results_path = os.path.join(work, "big.json")
    started = time.time()
    client(args, server, "run", "--model=stories260K", "--tasks=lambada_openai,lambada_standard",
           "--log_samples", f"--output={results_path}")
    job_seconds = time.time() - started
    with open(results_path) as f:
        results = json.load(f)
    n_samples = sum(len(v) for v in results["samples"].values())
    check(n_samples >= 10000, f"the big job has {n_samples} samples")
    job_id = results["hgeval_job"]["id"]
    pages = [("results (cold: fetches and parses the job's results)", f"/ui/results?id={job_id}"),
             ("results", f"/ui/results?id={job_id}"),
             ("jobs", "/ui"),
             ("samples, 100 a page", f"/ui/samples?id={job_id}&task=lambada_openai&page_size=100"),
             ("samples, last page", f"/ui/samples?id={job_id}&task=lambada_standard&page=51&page_size=100"),
             ("samples, text filter", f"/ui/samples?id={job_id}&task=lambada_openai&q=dragon"),
             ("compare", f"/ui/compare?ids={job_id},{job_id}")]
    measured = []
    for name, path in pages:
        # Wall time as the test sees it, besides the browser's own timing.
        started = time.time()
        open_page(browser, server.base + path)
        timing = navigation_timing(browser)
        timing["wall_ms"] = round(1000 * (time.time() - started), 1)
        timing.update({"page": name, "path": path})
        measured.append(timing)
        print(f"  {name}: drawn at {timing['drawn_ms']:.0f} ms, load event {timing['load_ms']:.0f} ms, "
              f"{timing['bytes']} bytes in {timing['requests']} requests", flush=True)
    slowest = max(measured, key=lambda t: max(t["drawn_ms"], t["load_ms"]))
    largest = max(measured, key=lambda t: t["bytes"])
    # What keeping the job's parsed results costs the server.
    with open(f"/proc/{server.process.pid}/status") as f:
        peak_rss_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(f"  server peak RSS {peak_rss_kib // 1024} MiB", flush=True)
    report = {"samples": n_samples, "results_json_bytes": os.path.getsize(results_path),
              "server_peak_rss_mib": peak_rss_kib // 1024,
              "job_seconds": round(job_seconds, 1), "pages": measured,
              "largest_page": largest["page"], "slowest_page": slowest["page"]}
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
    for timing in measured:
        check(max(timing["drawn_ms"], timing["load_ms"]) < 1000,
              f"{timing['page']} took {max(timing['drawn_ms'], timing['load_ms']):.0f} ms (bound 1 s)")
    print(f"ok: page speed with a {n_samples}-sample job: every page drawn within 1 s; largest "
          f"'{largest['page']}' ({largest['bytes']} bytes) drawn at {largest['drawn_ms']:.0f} ms, "
          f"slowest '{slowest['page']}' at {max(slowest['drawn_ms'], slowest['load_ms']):.0f} ms",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--client", required=True)
    parser.add_argument("--source_dir", required=True)
    parser.add_argument("--page_speed", action="store_true")
    parser.add_argument("--report", default="")
    parser.add_argument("--screenshots", default="")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="hgeval-web-ui-")
    server = browser = None
    try:
        server = Server(args, work)
        client(args, server, "health", "--wait=60")
        if not args.page_speed:
            check_refusals(server)  # needs no browser: checked before any skip
        chromium, driver = find_browser()
        browser = start_browser(chromium, driver)
        if args.page_speed:
            login(browser, server, args)
            check_page_speed(browser, server, args, work)
        else:
            cookie = login(browser, server, args)
            job_id, results_path = check_jobs_live(browser, server, args, work)
            check_results(browser, server, args, job_id, results_path, cookie)
            check_compare(browser, server, args, work, job_id, results_path)
            check_niah(browser, server, args, work)
            check_samples(browser, server, args, job_id, results_path)
            check_series(browser, server, args, work)
        print("PASS", flush=True)
        return 0
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        if server is not None:
            server.log.flush()
            print(open(os.path.join(work, "server.log")).read()[-3000:])
        return 1
    finally:
        if browser is not None:
            browser.quit()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
