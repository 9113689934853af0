"""report.html (`mockbroker report --out DIR`, docs/report.md) opened in headless Chromium: every image
of the page loads, the verdict table is shown with one row per client and the verdicts the synthetic
journal's known answers say, and a full-page screenshot is not blank.

The report is built once for the module, in process, from a synthetic journal (mockbroker/report/
synthetic.py: one client at the deadline, one early, one never throttled) on the run's shared
SparkSession (conftest.py).  The browser is Debian's chromium driven by its chromedriver through
Selenium, headless; Selenium never downloads a driver or browser (SE_OFFLINE) and the browser
resolves no host name (only file:// pages and 127.0.0.1).  Without chromium or chromedriver
(scripts/toolchains.sh, toolchain_chromium), Selenium, pyspark or matplotlib the module skips --
and fails under CI (tests/toolchains.py).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from mockbroker.report import synthetic as S
from tests.toolchains import chromium, unavailable

CLIENTS = [S.SyntheticClient("at-deadline", "deadline", "kafka-python", "2.0"),
           S.SyntheticClient("early", "early", "librdkafka", "2.11"),
           S.SyntheticClient("quiet", "never", "librdkafka", "2.11")]
REQUESTS = 6

#: Command-line switches of the browser: headless; --no-sandbox because the tests may run as root
#: (Chromium refuses its sandbox then); /dev/shm of a container is small; no background requests, and
#: every host name fails to resolve, so the page can reach nothing but files and 127.0.0.1.
CHROMIUM_ARGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update", "--no-first-run",
                 "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--window-size=1280,1024")


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
    """DIR of `mockbroker report JOURNAL --out DIR` over the synthetic journal, written in process."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        unavailable("the report.html browser test cannot run: matplotlib is not installed "
                    "(pip install -e '.[report]'), so the report writes no report.html")
    spark = request.getfixturevalue("spark_session")  # pyspark missing: skips, or fails under CI
    from mockbroker.report import job, render

    root = tmp_path_factory.mktemp("report-html")
    journal = str(root / "journal")
    S.write_journal(journal, CLIENTS, requests=REQUESTS)
    warnings: list[object] = []
    report = job.build(spark, job.input_paths([journal]), warn=warnings.append)
    assert warnings == []
    out = root / "out"
    render.write(report, str(out), [journal])
    assert (out / "report.html").is_file()
    return out


@pytest.fixture(scope="module")
def driver(browser_paths, report_dir):
    """Headless Chromium showing DIR/report.html; quit after the module's tests."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, chromedriver = browser_paths
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")  # Selenium Manager: use what is given, download nothing
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for arg in CHROMIUM_ARGS:
            options.add_argument(arg)
        d = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
        try:
            d.get((report_dir / "report.html").as_uri())  # returns once the page's load event fired
            yield d
        finally:
            d.quit()


def _images(driver) -> list[dict]:
    return driver.execute_script(
        "return Array.from(document.images, i => ({src: i.getAttribute('src'), id: i.id, "
        "complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}));")


def test_every_image_loads(driver, report_dir):
    from selenium.webdriver.support.ui import WebDriverWait

    # the load event waits for the images already; a decode still under way is waited for, not hoped for
    WebDriverWait(driver, 30).until(lambda d: all(i["complete"] for i in _images(d)))
    images = _images(driver)
    assert images, "report.html has no <img>"
    broken = [i for i in images if not (i["complete"] and i["width"] > 0 and i["height"] > 0)]
    assert broken == [], f"images that did not load: {broken}"
    srcs = {i["src"] for i in images}
    assert {f"client-{n}.png" for n in range(len(CLIENTS))} <= srcs, srcs  # one plot per client
    assert all((report_dir / s).is_file() for s in srcs), srcs
    # the client x API verdict matrix (render.py's matrix_plot)
    assert [i["src"] for i in images if i["id"] == "verdict-matrix"] == ["verdict-matrix.png"], images


def test_verdict_table_shows_every_clients_verdict(driver):
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, "table#verdicts")
    assert table.is_displayed()
    assert table.size["width"] > 0 and table.size["height"] > 0, table.size
    header = [th.text for th in table.find_elements(By.CSS_SELECTOR, "tr th")]
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in table.find_elements(By.TAG_NAME, "tr")]
    rows = [dict(zip(header, r, strict=True)) for r in rows if r]  # the header row has no <td>
    # the client column reads "<software name> <version> / <client id> / <principal>"
    got = {r["client"].split(" / ")[1]: r for r in rows}
    assert len(rows) == len(got) == len(CLIENTS), rows
    want = S.expected(CLIENTS, requests=REQUESTS)
    assert set(got) == set(want), got
    for cid, w in want.items():
        g = got[cid]
        assert (g["verdict"], g["requests"], g["throttles"], g["judged"], g["violations_obliged"]) == \
               (w["verdict"], str(w["requests"]), str(w["throttles"]), str(w["with_next"]), str(w["violations"])), g


def test_full_page_screenshot(driver, report_dir):
    import numpy as np
    from PIL import Image

    # a window as large as the page (plus the window's own border, if any): the screenshot is all of it
    size = driver.execute_script(
        "const e = document.documentElement; return {w: e.scrollWidth, h: e.scrollHeight, "
        "dw: window.outerWidth - window.innerWidth, dh: window.outerHeight - window.innerHeight};")
    driver.set_window_size(size["w"] + size["dw"], size["h"] + size["dh"])
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight];")
    assert inner[0] >= size["w"] and inner[1] >= size["h"], (inner, size)
    png = report_dir / "report-screenshot.png"
    assert driver.save_screenshot(str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(png.read_bytes())) as img:
        img.verify()
    with Image.open(png) as img:
        rgb = np.asarray(img.convert("RGB"))
    assert rgb.shape[0] >= size["h"] and rgb.shape[1] >= size["w"], (rgb.shape, size)
    colours = np.unique((rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2])
    assert len(colours) > 16, f"the screenshot has {len(colours)} colour(s): a blank page"
    # the matrix's cells are drawn: each verdict colour of this journal shows
    from mockbroker.report.render import VERDICT_COLOURS
    for verdict in ("honours", "ignores", "not throttled"):
        c = VERDICT_COLOURS[verdict]
        want = np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(rgb.astype(int) - want).max(axis=-1) <= 8).sum() > 1000, verdict
