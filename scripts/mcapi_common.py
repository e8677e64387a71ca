"""Shared by mcapi_render.py and mcapi_drive.py (run in the venv of `scripts/mcapi.sh
install`): Magnum's configuration for mcapi, a real Keystone token and the request context
Magnum's API would build from it, the imports of mcapi's modules, Nova server-group listing,
the removal of mcapi's process-wide server-group cache, and the helm shim (helm is not
installed: mcapi's chart renderings come out empty)."""
import os
import shutil
import sys
import tempfile

NAMESPACE = "magnum-system"


def configure(rows, connection):
    """Magnum's and mcapi's options registered, [database] connection set, keystone
    www_authenticate_uri = rows["keystone_url"], then rows["conf"] ({group: {opt: value}},
    group "DEFAULT" for [DEFAULT]) applied as overrides. Returns cfg.CONF."""
    import magnum.conf  # noqa: F401  (registers Magnum's groups: [cinder], [nova_client], ...)
    from keystonemiddleware import auth_token  # noqa: F401  (registers [keystone_authtoken])
    from oslo_config import cfg

    from magnum_cluster_api import conf as _mcapi_conf  # noqa: F401  ([capi_client], ...)

    conf = cfg.CONF
    conf([], project="magnum", default_config_files=[], default_config_dirs=[])
    conf.set_override("connection", connection, group="database")
    # What Magnum's API puts in context.auth_url; the clients use auth_token_info.
    conf.set_override("www_authenticate_uri", rows["keystone_url"], group="keystone_authtoken")
    for group, opts in (rows.get("conf") or {}).items():
        for name, value in opts.items():
            conf.set_override(name, value, group=None if group == "DEFAULT" else group)
    return conf


def service_credentials(conf, rows):
    """Magnum's service credentials ([keystone_auth], magnum.common.keystone): what an admin
    context without a token authenticates with (the periodic tasks; mcapi's
    is_service_enabled). rows["admin"] {"user", "password", "project"}, default Keystone's
    admin (scripts/keystone.sh)."""
    admin = rows.get("admin") or {}
    auth = {"auth_url": rows["keystone_url"],
            "username": admin.get("user", "admin"),
            "password": admin.get("password", "admin-secret"),
            "project_name": admin.get("project", "admin"),
            "user_domain_name": "Default", "project_domain_name": "Default"}
    from keystoneauth1 import loading as ka_loading
    conf.set_override("auth_type", "password", group="keystone_auth")
    conf.register_opts(ka_loading.get_auth_plugin_conf_options(
        ka_loading.get_plugin_loader("password")), group="keystone_auth")
    for k, v in auth.items():
        conf.set_override(k, v, group="keystone_auth")


def user_context(rows):
    """A Keystone token for rows' user (POST /v3/auth/tokens, password, project scope) and
    the context Magnum's API ContextHook builds from keystonemiddleware's headers."""
    import requests

    from magnum.common import context

    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": rows["user"], "password": rows["password"],
            "domain": {"name": rows.get("user_domain", "Default")}}}},
        "scope": {"project": {"name": rows["project"],
                              "domain": {"name": rows.get("project_domain", "Default")}}},
    }}
    r = requests.post(rows["keystone_url"].rstrip("/") + "/auth/tokens", json=body, timeout=60)
    r.raise_for_status()
    info = r.json()
    token = info["token"]
    # As magnum.api.hooks.ContextHook from keystonemiddleware's X-* headers and
    # keystone.token_info; is_admin given (demo is no admin) instead of the policy check.
    return context.make_context(
        auth_token=r.headers["X-Subject-Token"],
        auth_url=rows["keystone_url"],
        auth_token_info=info,
        user_name=token["user"]["name"],
        user_id=token["user"]["id"],
        project_name=token["project"]["name"],
        project_id=token["project"]["id"],
        user_domain_id=token["user"]["domain"]["id"],
        user_domain_name=token["user"]["domain"]["name"],
        roles=[role["name"] for role in token.get("roles", [])],
        is_admin=False,
    )


def imports():
    """mcapi's Python modules used by the scripts; returns the compiled module."""
    from magnum_cluster_api import clients, resources, utils  # noqa: F401
    from magnum_cluster_api import magnum_cluster_api as rs

    return rs


def server_groups_in_nova(ctx, names, strict):
    """{name: id} of the Nova server groups with these names, listed as ctx's user."""
    from magnum_cluster_api import clients

    found = {}
    for sg in clients.get_openstack_api(ctx).list_server_groups():
        if sg.name in names:
            found.setdefault(sg.name, []).append(sg.id)
    out = {}
    for name in names:
        ids = found.get(name, [])
        if strict and len(ids) != 1:
            raise RuntimeError("Nova has %d server groups named %r" % (len(ids), name))
        if ids:
            out[name] = ids[0] if len(ids) == 1 else ids
    return out


def remove_server_group_cache():
    """mcapi's utils makes a diskcache.Cache() in a new temporary directory at import."""
    cache = getattr(sys.modules.get("magnum_cluster_api.utils"), "g_server_group_cache", None)
    if cache is not None:
        cache._cache.close()
        shutil.rmtree(cache._cache.directory, ignore_errors=True)


HELM_SHIM = r"""#!/bin/sh
# magnum-rs mcapi_common.py: helm is not installed; this shim stands in for it (see
# mcapi_drive.py and mcapi_render.py). Every call is appended to $MCAPI_HELM_LOG.
echo "$*" >> "$MCAPI_HELM_LOG"
case "$1" in
  version) echo 'version.BuildInfo{Version:"v0.0.0-magnum-rs-shim"}' ;;
  template) cat >/dev/null ;;
  delete|uninstall|get) echo "Error: uninstall: Release not loaded: $3: release: not found" >&2; exit 1 ;;
  *) echo "helm shim: '$1' is not supported (helm is not installed)" >&2; exit 1 ;;
esac
"""


class Helm:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="mcapi-helm-shim-")
        self.log = os.path.join(self.dir, "calls.log")
        path = os.path.join(self.dir, "helm")
        with open(path, "w") as f:
            f.write(HELM_SHIM)
        os.chmod(path, 0o755)
        open(self.log, "w").close()
        os.environ["MCAPI_HELM_LOG"] = self.log
        os.environ["PATH"] = self.dir + os.pathsep + os.environ.get("PATH", "")

    def calls(self):
        with open(self.log) as f:
            return [line.rstrip("\n") for line in f if line.strip()]

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)
