"""Serve the real Magnum 23 API without Keystone and without a conductor.

Run by `scripts/magnum-api.sh start` inside the magnum venv:
    python magnum_api_serve.py --config-file <magnum.conf> --lib <dir> [--threaded]

- Imports `magnum.wsgi.api:application` (the official WSGI entry point) instead of
  running the `magnum-api` console script: the console script installs
  MagnumObjectIndirectionAPI, which turns every object call into an RPC call to a
  conductor that does not exist.  With `transport_url = fake://` only the casts
  (resize, nodegroup create/update/delete) go nowhere.
- Serves it as the console script does: werkzeug `run_simple(host, port, app,
  processes=[api]workers)` (one forked child per connection), or, with --threaded,
  one process with a thread per connection (benchmark comparison only).
- `--lib` holds the generated `*.dist-info` that registers the stub drivers of
  magnum_api_stubs.py (next to this file) under the `magnum.drivers` entry point.
- Calls setsid() first, so the server and its forked children form one process
  group (pgid == this pid) that outlives the starting shell and that
  `magnum-api.sh stop` can kill as a whole.
"""
import argparse
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config-file", required=True)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--threaded", action="store_true")
    args = parser.parse_args()

    try:
        os.setsid()
    except OSError:
        pass  # already a process-group leader

    here = os.path.dirname(os.path.abspath(__file__))
    for path in (here, os.path.abspath(args.lib)):
        if path not in sys.path:
            sys.path.insert(0, path)

    # magnum.wsgi.api runs prepare_service(sys.argv) at import time.
    sys.argv = ["magnum-api", "--config-file", os.path.abspath(args.config_file)]
    from magnum.wsgi.api import application
    import magnum.conf
    from magnum.drivers.common import driver as driver_module

    conf = magnum.conf.CONF

    # Fail fast (the starting script reports this output) instead of serving 500s.
    drivers = sorted(ep.name for ep, _ in driver_module.Driver.load_entry_points())
    print("magnum_api_serve: loaded drivers: %s" % ", ".join(drivers), flush=True)
    import sqlalchemy as sa
    engine = sa.create_engine(conf.database.connection)  # throwaway, not shared
    try:
        with engine.connect() as conn:
            head = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    except Exception as exc:  # noqa: BLE001
        print("magnum_api_serve: database not usable (%s): %s"
              % (engine.url.render_as_string(hide_password=True), exc), flush=True)
        return 1
    finally:
        engine.dispose()
    print("magnum_api_serve: database at alembic %s" % head, flush=True)

    from werkzeug import serving
    host, port = conf.api.host, conf.api.port
    if args.threaded:
        print("magnum_api_serve: pid %d serving http://%s:%d (threaded)"
              % (os.getpid(), host, port), flush=True)
        serving.run_simple(host, port, application, threaded=True)
    else:
        workers = conf.api.workers
        if not workers:
            from oslo_concurrency import processutils
            workers = processutils.get_worker_count()
        print("magnum_api_serve: pid %d serving http://%s:%d (processes=%d)"
              % (os.getpid(), host, port, workers), flush=True)
        serving.run_simple(host, port, application, processes=workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
