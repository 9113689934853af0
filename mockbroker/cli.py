"""``mockbroker serve [--host H] [--port P] [--config FILE] [-c key=value ...]`` and
``mockbroker admin --url URL ...`` (``admin_client.py``) and ``mockbroker report JOURNAL_PATH... --out DIR
[--master URL]`` (``report/``, docs/report.md; PySpark is imported only by that subcommand) and
``mockbroker probe [--bootstrap HOST:PORT] [--timeout S]`` (``probe.py``: the container's health check) and
``mockbroker certs DIR [--client NAME ...] [--password P] [--days N]`` (``certs.py``: a throwaway CA with
broker and client certificates for TLS listeners; prints the broker config that uses them).

Only ``serve`` loads the broker (imported in ``main``), so ``probe``, ``admin`` and ``--version``
start in a few tens of milliseconds.

Prints exactly one line to stdout when it accepts connections,
``mockbroker ready bootstrap=HOST:PORT`` (with `` admin=HOST:PORT`` when
``mock.admin.listener`` is set), and stops cleanly on SIGINT/SIGTERM.
Logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from typing import TYPE_CHECKING

from . import admin_client, probe

if TYPE_CHECKING:
    from .config.broker_config import BrokerConfig


def _version() -> str:
    """The installed distribution's version (pyproject.toml), without importing the broker."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mockbroker")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _report_arguments(r: argparse.ArgumentParser) -> None:
    """The options of ``mockbroker report`` (docs/report.md), here: parsing them imports no pyspark."""
    r.add_argument("paths", nargs="+", metavar="JOURNAL_PATH",
                   help="journal files, directories, globs or Hadoop URIs")
    r.add_argument("--out", required=True, help="output directory (created if missing)")
    r.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    r.add_argument("--progress-every", type=float, default=None, metavar="SECONDS",
                   help="progress line interval (default 0.5 s on a terminal, 10 s otherwise; 0: none)")
    r.add_argument("--quota-window-num", type=int, default=11, metavar="N",
                   help="the broker's quota.window.num, for the windowed rates (default 11, Kafka's)")
    r.add_argument("--quota-window-size-seconds", type=int, default=1, metavar="S",
                   help="the broker's quota.window.size.seconds (default 1, Kafka's)")


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up when asked for (importlib.metadata costs ~12 ms of
    every start otherwise)."""

    def __call__(self, parser: argparse.ArgumentParser, _namespace: argparse.Namespace, _values: object,
                 _option_string: str | None = None) -> None:
        print(f"mockbroker {_version()}")  # to stdout, as argparse's own "version" action
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mockbroker", description="A Kafka-compatible mock broker.")
    p.add_argument("--version", action=_VersionAction, nargs=0, help="show program's version number and exit")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the broker")
    s.add_argument("--host", help="bind address (default: from listeners, 127.0.0.1)")
    s.add_argument("--port", type=int, help="port of the first broker; 0 picks a free one (default 9092)")
    s.add_argument("--config", help="TOML configuration file")
    s.add_argument("-c", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="set a configuration key (repeatable)")
    s.add_argument("--log-level", default="INFO", help="log level on stderr (default INFO)")
    admin_client.build_parser(sub)
    probe.build_parser(sub)
    c = sub.add_parser("certs", help="make a throwaway CA, broker and client certificates (PEM and PKCS12)")
    c.add_argument("dir", help="directory to write them to (created if missing)")
    c.add_argument("--client", action="append", default=[], metavar="NAME",
                   help="a client certificate CN=NAME (repeatable; default: client)")
    c.add_argument("--password", default="changeit", help="password of the PKCS12 files (default changeit)")
    c.add_argument("--days", type=int, default=30, help="validity in days (default 30)")
    r = sub.add_parser("report", help="throttle-conformance report over request journals (docs/report.md)")
    _report_arguments(r)
    return p


async def _serve(cfg: BrokerConfig, host: str | None, port: int | None) -> int:
    import asyncio

    from .runner import assemble, ready_line
    cluster, _control, admin = assemble(cfg, host=host, port=port)
    await cluster.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(ready_line(cluster, admin) + "\n")
    sys.stdout.flush()
    await stop.wait()
    await cluster.stop()
    logging.getLogger("mockbroker").info("stopped")
    return 0


def _certs(args: argparse.Namespace) -> int:
    from .security.certs import make_certs

    made = make_certs(args.dir, clients=args.client or ["client"], password=args.password, days=args.days)
    print(f"CA: {made.ca}")
    for pair in [made.broker, *made.clients.values()]:
        print(f"{pair.name}: {pair.subject}: {pair.cert} {pair.key} {pair.keystore_pem} {pair.p12}")
    print("broker config (mTLS):")
    for key, value in made.broker_config().items():
        print(f"  -c {key}={value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "report":  # imported here only: the broker never imports pyspark
        from . import report
        return report.run(args)
    if args.command == "admin":
        return admin_client.run(args)
    if args.command == "probe":
        return probe.run(args)
    if args.command == "certs":
        return _certs(args)
    from .config.broker_config import BrokerConfig, ConfigError  # serve only, with the broker's modules
    from .runner import run_loop
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        cfg = BrokerConfig.load(file=args.config, overrides=args.overrides)
    except ConfigError as e:
        print(f"mockbroker: configuration error: {e}", file=sys.stderr)
        return 2
    try:
        return run_loop(lambda: _serve(cfg, args.host, args.port), cfg)
    except OSError as e:
        print(f"mockbroker: cannot listen: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
