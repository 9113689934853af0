"""report.html (`mockbroker report --out DIR`, docs/report.md) opened in headless Chromium at 1280 px:
a self-contained page (inline CSS and script, plots as data URIs, nothing fetched) on which nothing
overflows horizontally; a verdict matrix per run with cells coloured by verdict and a legend; each
client's section with its plot and, beside it, its verdict; detail tables that sort and collapse;
a full-page screenshot that is not blank.

The report is built once for the module, in process, from synthetic journals of two runs
(mockbroker/report/synthetic.py: seven clients that honour, ignore, partly honour or are never
throttled, long software names among them; an observe run and a mute run with the broker's
after_throttle) on the run's shared SparkSession (conftest.py).  The browser is Debian's chromium
driven by its chromedriver through Selenium, headless; Selenium never downloads a driver or browser
(SE_OFFLINE) and the browser resolves no host name (only file:// pages and 127.0.0.1).  Without
chromium or chromedriver (scripts/toolchains.sh, toolchain_chromium), Selenium, pyspark or
matplotlib the module skips -- and fails under CI (tests/toolchains.py).

``screenshot(page, png)`` is also how the report's screenshot for a pull request is taken
(docs/report.md).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from mockbroker.report import synthetic as S
from tests.toolchains import chromium, unavailable

CLIENTS = [S.SyntheticClient("at-deadline", "deadline", "kafka-python", "3.0.12"),
           S.SyntheticClient("ck-producer", "early", "confluent-kafka-python", "2.16.1-rdkafka-2.16.0"),
           S.SyntheticClient("aio-producer", "partly", "aiokafka", "0.14.0"),
           S.SyntheticClient("raw-ignores", "early", "raw-ignores", "1.0"),
           S.SyntheticClient("raw-honours", "deadline", "raw-honours", "1.0"),
           S.SyntheticClient("java-consumer-with-a-long-client-id-0", "partly", "apache-kafka-java", "4.4.0",
                             quotas=(("consumer_byte_rate", 40_000.0), ("producer_byte_rate", S.PRODUCE_BYTE_RATE),
                                     ("request_percentage", 12.5))),
           S.SyntheticClient("feeder", "never", "kafka-python", "3.0.12")]
RUNS = ((1_790_000_000_000, "observe", CLIENTS), (1_790_000_900_000, "mute", CLIENTS[:6]))
REQUESTS = 12
WIDTH = 1280

#: Command-line switches of the browser: headless; --no-sandbox because the tests may run as root
#: (Chromium refuses its sandbox then); /dev/shm of a container is small; no background requests, and
#: every host name fails to resolve, so the page can reach nothing but files and 127.0.0.1.
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--hide-scrollbars",
                 f"--window-size={WIDTH},1024")


def open_browser(browser: str, chromedriver: str) -> Any:
    """Headless Chromium (Selenium, offline) with a 1280-px-wide viewport."""
    import os

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager: use what is given, download nothing
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    d = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    viewport(d, WIDTH, 1024)
    return d


def viewport(driver: Any, width: int, height: int) -> None:
    """A viewport of exactly ``width`` x ``height`` CSS pixels (the device metrics, not the window)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})


def screenshot(driver: Any, png: Path) -> bytes:
    """The whole page at the viewport's width, every <details> open, saved as ``png``."""
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    height = driver.execute_script("return document.documentElement.scrollHeight")
    viewport(driver, WIDTH, height)
    try:
        data = driver.get_screenshot_as_png()
    finally:
        viewport(driver, WIDTH, 1024)
    png.write_bytes(data)
    return data


@pytest.fixture(scope="module")
def browser_paths() -> tuple[str, str]:
    """chromium and chromedriver, resolved before Spark starts (nothing to run without them)."""
    paths = chromium()
    try:
        import selenium  # noqa: F401
    except ImportError:
        unavailable("the report.html browser test cannot run: selenium is not installed (pip install -e '.[test]')")
    return paths


@pytest.fixture(scope="module")
def report_dir(browser_paths, tmp_path_factory, request) -> Path:
    """DIR of `mockbroker report JOURNAL --out DIR` over the synthetic journals, written in process."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        unavailable("the report.html browser test cannot run: matplotlib is not installed "
                    "(pip install -e '.[report]'), so the report has no plots")
    spark = request.getfixturevalue("spark_session")  # pyspark missing: skips, or fails under CI
    from mockbroker.report import job, reading, render

    root = tmp_path_factory.mktemp("report-html")
    journal = str(root / "journal")
    for start, mode, clients in RUNS:
        S.write_journal(journal, clients, requests=REQUESTS, start_wall_ms=start, mode=mode,
                        after_throttle=mode == "mute", bootstrap=True)
    warnings: list[object] = []
    report = job.build(spark, reading.input_paths([journal]), warn=warnings.append)
    assert warnings == []
    out = root / "out"
    render.write(report, str(out), [journal])
    assert (out / "report.html").is_file()
    return out


@pytest.fixture(scope="module")
def driver(browser_paths, report_dir):
    """Headless Chromium showing DIR/report.html; quit after the module's tests."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")
        d = open_browser(*browser_paths)
        try:
            d.get((report_dir / "report.html").as_uri())  # returns once the page's load event fired
            yield d
        finally:
            d.quit()


def _want() -> dict[tuple[int, str], dict[str, Any]]:
    """(run number, client id): the synthetic journals' known answers."""
    out = {}
    for i, (_, mode, clients) in enumerate(RUNS, 1):
        for cid, w in S.expected(clients, REQUESTS, bootstrap=True).items():
            out[(i, cid)] = w
    return out


def _rgb(colour: str) -> str:
    """``#rrggbb`` as Selenium reads a computed colour."""
    return "rgba({}, {}, {}, 1)".format(*(int(colour[i:i + 2], 16) for i in (1, 3, 5)))


def test_page_is_self_contained(driver, report_dir):
    """Inline CSS and script, every plot a PNG data URI that decodes, nothing fetched by the page."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return Array.from(document.images).every(i => i.complete)"))
    images = driver.execute_script("return Array.from(document.images, i => ({src: i.getAttribute('src'), "
                                   "width: i.naturalWidth, height: i.naturalHeight}))")
    assert len(images) == sum(len(c) for _, _, c in RUNS)  # a plot per client and run
    assert all(i["src"].startswith("data:image/png;base64,") and i["width"] > 0 and i["height"] > 0
               for i in images), [(i["src"][:40], i["width"]) for i in images]
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert driver.execute_script("return document.querySelectorAll('link, script[src], iframe, object').length") == 0
    assert driver.execute_script("return document.querySelector('style').textContent.length") > 1000
    page = (report_dir / "report.html").read_text()
    assert "client-1-1.png" not in page.replace("data-file='client-1-1.png'", "")  # the files are for report.md


def test_nothing_overflows_at_1280_px(driver):
    """At 1280 px, with every collapsible section open, no element reaches past the right edge and
    no table needs a horizontal scroll bar."""
    driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
    try:
        m = driver.execute_script("""
            const root = document.documentElement, w = root.clientWidth;
            const wide = [];
            for (const e of document.body.querySelectorAll('*')) {
              const r = e.getBoundingClientRect();
              if (r.width && r.right > w + 0.5) wide.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
            }
            const scrolled = Array.from(document.querySelectorAll('.scroll'))
              .filter(s => s.scrollWidth > s.clientWidth + 1).map(s => s.firstElementChild.id || s.className);
            return {w: w, scrollWidth: root.scrollWidth, wide: wide.slice(0, 10), scrolled: scrolled};""")
    finally:
        driver.execute_script("document.querySelectorAll('details.table').forEach((d, i) => d.open = i === 0)")
    assert m["w"] == WIDTH, m
    assert m["scrollWidth"] <= m["w"], m
    assert m["wide"] == [] and m["scrolled"] == [], m


def test_verdict_matrix_is_coloured_with_a_legend(driver):
    """A matrix per run: a row per client, its verdict cell coloured as the legend says."""
    from selenium.webdriver.common.by import By

    from mockbroker.report.views import VERDICT_COLOURS
    legend = {e.text: e.find_element(By.CSS_SELECTOR, ".chip").value_of_css_property("background-color")
              for e in driver.find_elements(By.CSS_SELECTOR, ".legend > span")}
    assert legend == {k: _rgb(v) for k, v in VERDICT_COLOURS.items()}
    want = _want()
    seen = set()
    for run in (1, 2):
        table = driver.find_element(By.ID, f"matrix-{run}")
        for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr"):
            client, verdict = tr.find_elements(By.TAG_NAME, "td")[:2]
            cid = client.text.split(" / ")[1]
            w = want[(run, cid)]
            assert verdict.text.startswith(w["verdict"]), (run, cid, verdict.text)
            assert verdict.value_of_css_property("background-color") == _rgb(VERDICT_COLOURS[w["verdict"]])
            seen.add((run, cid))
    assert seen == set(want)


def test_each_client_has_its_plot_and_verdict_beside_it(driver):
    from selenium.webdriver.common.by import By

    want = _want()
    cards = driver.find_elements(By.CSS_SELECTOR, "article.client-card")
    assert len(cards) == len(want)
    runs = sorted({c.get_attribute("data-run") for c in cards})
    assert runs == ["2026-09-21 14:13:20 UTC", "2026-09-21 14:28:20 UTC"]
    for card in cards:
        run = runs.index(card.get_attribute("data-run")) + 1
        cid = card.get_attribute("data-client").split(" / ")[1]
        img = card.find_element(By.TAG_NAME, "img")
        badge = card.find_element(By.CSS_SELECTOR, ".badge.verdict")
        assert badge.text == want[(run, cid)]["verdict"], (run, cid)
        assert "alt" in img.get_attribute("outerHTML") and cid in img.get_attribute("alt")
        i, b = img.rect, badge.rect
        assert i["width"] >= 700 and b["x"] >= i["x"] + i["width"], (i, b)  # beside the plot, not below it
        assert b["y"] < i["y"] + i["height"]


def test_tables_sort_and_collapse(driver):
    from selenium.webdriver.common.by import By

    requests = driver.find_element(By.CSS_SELECTOR, "table#requests")
    details = requests.find_element(By.XPATH, "ancestor::details")
    assert not requests.is_displayed() and details.get_attribute("open") is None  # collapsed to begin with
    details.find_element(By.TAG_NAME, "summary").click()
    assert requests.is_displayed()
    table = driver.find_element(By.CSS_SELECTOR, "table#verdicts")
    col = [th.get_attribute("data-col") for th in table.find_elements(By.CSS_SELECTOR, "thead th")].index("throttles")

    def column() -> list[int]:
        return [int(tr.find_elements(By.TAG_NAME, "td")[col].text.replace(",", ""))
                for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    before = column()
    assert before[0] > 0 and 0 in before  # sorted by run and client: the client never throttled comes later
    header = table.find_elements(By.CSS_SELECTOR, "thead th")[col]
    header.click()
    assert column() == sorted(before) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert column() == sorted(before, reverse=True) and header.get_attribute("aria-sort") == "descending"
    details.find_element(By.TAG_NAME, "summary").click()
    assert not requests.is_displayed()


def test_verdict_table_shows_every_clients_verdict(driver):
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, "table#verdicts")
    assert table.is_displayed()
    cols = [th.get_attribute("data-col") for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    rows = [dict(zip(cols, [td.text for td in tr.find_elements(By.TAG_NAME, "td")], strict=True))
            for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    runs = sorted({r["client"].split("\n")[1] for r in rows})
    got = {(runs.index(r["client"].split("\n")[1]) + 1, r["client"].split("\n")[0].split(" / ")[1]): r for r in rows}
    want = _want()
    assert set(got) == set(want)
    for k, w in want.items():
        g = got[k]
        assert (g["verdict"], g["requests"], g["throttles"], g["judged"], g["violations_obliged"]) == \
               (w["verdict"], str(w["requests"]), str(w["throttles"]), str(w["with_next"]), str(w["violations"])), k
        assert g["throttle_modes"] == ("" if w["verdict"] == "not throttled" else RUNS[k[0] - 1][1])


def test_full_page_screenshot(driver, report_dir):
    import numpy as np
    from PIL import Image

    from mockbroker.report.views import VERDICT_COLOURS
    png = report_dir / "report-1280.png"
    data = screenshot(driver, png)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as img:
        img.verify()
    with Image.open(png) as img:
        rgb = np.asarray(img.convert("RGB"))
    height = driver.execute_script("return document.documentElement.scrollHeight")
    assert rgb.shape[1] == WIDTH and rgb.shape[0] >= height - 1, (rgb.shape, height)
    every4 = rgb[::4, ::4]  # a blank page is blank in every fourth pixel too
    colours = np.unique((every4[..., 0].astype(np.uint32) << 16) | (every4[..., 1].astype(np.uint32) << 8) | every4[..., 2])
    assert len(colours) > 16, f"the screenshot has {len(colours)} colour(s): a blank page"
    # int16 over bands of rows: a whole-page int64 difference of a ~16,000 px page took the test
    # process to a 2 GB peak (and libFuzzer, started later from the same process, inherits the peak)
    for verdict in ("honours", "ignores", "partly", "not throttled"):  # the matrix's cells are drawn
        c = VERDICT_COLOURS[verdict]
        want = np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
        near = sum(int((np.abs(rgb[r:r + 1024].astype(np.int16) - want).max(axis=-1) <= 8).sum())
                   for r in range(0, rgb.shape[0], 1024))
        assert near > 1000, verdict
