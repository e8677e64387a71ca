#!/usr/bin/env python3
"""Registers the OpenStack API services that scripts/openstack.sh runs in a Keystone that
scripts/keystone.sh started, through Keystone's REST API as the project-scoped admin
(admin/admin-secret, as keystone.sh bootstraps it):

* users `glance`, `nova`, `neutron`, `cinder` (password `<name>-secret`, domain default,
  default project `service`) with roles `admin` and `service` on project `service`: admin so
  keystonemiddleware may validate tokens, service as devstack grants it for
  service-to-service calls;
* services and their public and internal endpoints in RegionOne:
  glance/image at GLANCE_URL, nova/compute at NOVA_URL/v2.1, neutron/network at
  NEUTRON_URL, cinder/block-storage and cinderv3/volumev3 at CINDER_URL/v3/%(project_id)s.

Idempotent: what exists is found by name (users, services) or by service + interface
(endpoints) and brought up to date, so it may run again against the same Keystone.
Writes the ids to OUT (JSON).

Usage: register.py KEYSTONE_URL GLANCE_URL NOVA_URL NEUTRON_URL CINDER_URL OUT
"""

import json
import sys
import urllib.error
import urllib.parse
import urllib.request


def call(method, url, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("X-Auth-Token", token)
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
        return resp.headers, (json.loads(raw) if raw else None)


def password_auth(ks, user, password, project):
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {"name": user, "domain": {"name": "Default"}, "password": password}
                },
            },
            "scope": {"project": {"name": project, "domain": {"name": "Default"}}},
        }
    }
    headers, _ = call("POST", f"{ks}/auth/tokens", body)
    return headers["X-Subject-Token"]


def main():
    ks, glance, nova, neutron, cinder, out = sys.argv[1:7]
    admin = password_auth(ks, "admin", "admin-secret", "admin")

    def get(path):
        return call("GET", f"{ks}/{path}", token=admin)[1]

    roles = {r["name"]: r["id"] for r in get("roles")["roles"]}
    service_projects = get("projects?name=service&domain_id=default")["projects"]
    if not service_projects:
        sys.exit("register.py: Keystone has no project `service` (run scripts/keystone.sh start)")
    service_project = service_projects[0]["id"]

    ids = {"users": {}, "services": {}, "endpoints": {}}
    for name in ("glance", "nova", "neutron", "cinder"):
        user = {
            "name": name,
            "domain_id": "default",
            "password": f"{name}-secret",
            "default_project_id": service_project,
            "enabled": True,
        }
        found = get(f"users?name={name}&domain_id=default")["users"]
        if found:
            uid = found[0]["id"]
            call("PATCH", f"{ks}/users/{uid}", {"user": user}, token=admin)
        else:
            uid = call("POST", f"{ks}/users", {"user": user}, token=admin)[1]["user"]["id"]
        for role in ("admin", "service"):
            call("PUT", f"{ks}/projects/{service_project}/users/{uid}/roles/{roles[role]}",
                 token=admin)
        ids["users"][name] = uid

    cinder_v3 = cinder.rstrip("/") + "/v3/%(project_id)s"
    catalog = (
        ("glance", "image", "OpenStack Image", glance.rstrip("/")),
        ("nova", "compute", "OpenStack Compute", nova.rstrip("/") + "/v2.1"),
        ("neutron", "network", "OpenStack Networking", neutron.rstrip("/")),
        ("cinder", "block-storage", "OpenStack Block Storage", cinder_v3),
        ("cinderv3", "volumev3", "OpenStack Block Storage (volumev3 alias)", cinder_v3),
    )
    for name, stype, description, url in catalog:
        found = [s for s in get(f"services?type={stype}")["services"] if s["name"] == name]
        if found:
            sid = found[0]["id"]
        else:
            service = {"name": name, "type": stype, "description": description, "enabled": True}
            sid = call("POST", f"{ks}/services", {"service": service}, token=admin)[1]["service"]["id"]
        ids["services"][stype] = sid
        ids["endpoints"][stype] = {}
        existing = get(f"endpoints?service_id={sid}")["endpoints"]
        for interface in ("public", "internal"):
            endpoint = {
                "service_id": sid,
                "interface": interface,
                "url": url,
                "region_id": "RegionOne",
                "enabled": True,
            }
            mine = [e for e in existing if e["interface"] == interface]
            if mine:
                eid = mine[0]["id"]
                if mine[0]["url"] != url:
                    call("PATCH", f"{ks}/endpoints/{eid}", {"endpoint": endpoint}, token=admin)
            else:
                eid = call("POST", f"{ks}/endpoints", {"endpoint": endpoint},
                           token=admin)[1]["endpoint"]["id"]
            ids["endpoints"][stype][interface] = eid

    # Every service user can log in to the service project.
    for name in ids["users"]:
        password_auth(ks, name, f"{name}-secret", "service")

    with open(out, "w") as f:
        json.dump(ids, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except urllib.error.HTTPError as e:
        sys.exit(f"register.py: {e.code} {e.reason}: {e.read()[:500]!r}")
    except urllib.error.URLError as e:
        sys.exit(f"register.py: Keystone at {sys.argv[1]} unreachable: {e.reason}")
