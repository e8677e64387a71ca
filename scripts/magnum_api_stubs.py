"""Stand-ins for Keystone and for a cluster driver, used by scripts/magnum_api_serve.py.

1. ``noauth_filter_factory``: a paste filter put where magnum's pipeline has
   keystonemiddleware's ``authtoken``.  It only fills in (``environ.setdefault``) the
   identity headers that authtoken would set from a validated token; magnum's
   ContextHook builds the RequestContext from exactly these headers.  A request picks
   its own identity by sending them (X-Project-Id, X-User-Id, X-Roles, ...).
   Paste options ``x_roles = ...`` etc. override the defaults.

2. Two stub cluster drivers, registered under the ``magnum.drivers`` entry point by a
   ``*.dist-info`` that magnum-api.sh generates in the cache directory:

   - ``UbuntuStubDriver`` provides (vm, ubuntu, kubernetes) and, like
     magnum-capi-helm / magnum-cluster-api, allows master resizes to odd sizes >= 1
     (``validate_master_resize`` -> ``validate_master_size``);
   - ``FedoraCoreOSStubDriver`` provides (vm, fedora-coreos, kubernetes) and keeps the
     base behaviour (``MasterNGResizeNotSupported`` for any master resize), like the
     old in-tree heat driver.

   Every lifecycle method raises NotImplementedError; the API only consults the
   driver for the master-resize rule (the conductor, which would call the rest, is
   not running).
"""

from magnum.drivers.common import driver as _driver

# Identity used when a request does not send its own headers: the owner of the
# seeded clusters (scripts/magnum_seed.py), as a project member.
DEFAULT_IDENTITY = {
    "HTTP_X_IDENTITY_STATUS": "Confirmed",
    "HTTP_X_PROJECT_ID": "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa",
    "HTTP_X_PROJECT_NAME": "demo",
    "HTTP_X_PROJECT_DOMAIN_ID": "default",
    "HTTP_X_USER_ID": "u-demo",
    "HTTP_X_USER_NAME": "demo",
    "HTTP_X_USER_DOMAIN_ID": "default",
    "HTTP_X_USER_DOMAIN_NAME": "Default",
    "HTTP_X_ROLES": "member,reader",
}


def noauth_filter_factory(global_conf, **local_conf):
    defaults = dict(DEFAULT_IDENTITY)
    for key, value in local_conf.items():
        if key.lower().startswith("x_"):
            defaults["HTTP_" + key.upper()] = value

    def _filter(app):
        def noauth(environ, start_response):
            for key, value in defaults.items():
                environ.setdefault(key, value)
            return app(environ, start_response)
        return noauth

    return _filter


def _not_implemented(self, *args, **kwargs):
    raise NotImplementedError("magnum-rs stub driver: no cluster lifecycle")


class _StubDriver(_driver.Driver):
    """Base Driver with every abstract lifecycle method stubbed out."""

    _provides = ()

    @property
    def provides(self):
        return [{"server_type": s, "os": o, "coe": c} for s, o, c in self._provides]

    create_cluster = _not_implemented
    update_cluster = _not_implemented
    upgrade_cluster = _not_implemented
    delete_cluster = _not_implemented
    resize_cluster = _not_implemented
    create_federation = _not_implemented
    update_federation = _not_implemented
    delete_federation = _not_implemented
    create_nodegroup = _not_implemented
    update_nodegroup = _not_implemented
    delete_nodegroup = _not_implemented


class UbuntuStubDriver(_StubDriver):
    """(vm, ubuntu, kubernetes); master resize allowed to odd sizes (capi-helm rule)."""

    _provides = (("vm", "ubuntu", "kubernetes"),)

    def validate_master_resize(self, node_count):
        return self.validate_master_size(node_count)


class FedoraCoreOSStubDriver(_StubDriver):
    """(vm, fedora-coreos, kubernetes); base rule: master resize not supported."""

    _provides = (("vm", "fedora-coreos", "kubernetes"),)
