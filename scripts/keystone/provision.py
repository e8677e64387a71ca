#!/usr/bin/env python3
"""Provisions a freshly bootstrapped Keystone through its REST API, as the project-scoped
admin, for magnum-rs's tests:

* projects `service`, `demo`, `alt` (domain default);
* users `magnum` (service and admin on service, as Magnum's devstack plugin), `demo`
  (member on demo), `alt` (member on alt), `reader` (reader on demo); passwords
  `<name>-secret`; default projects set;
* service `magnum` (type `container-infra`) with public and internal endpoints at the
  given URL in RegionOne.

Writes the ids to BASE/ids.json and a clouds.yaml for the CLI to BASE/clouds.yaml.

Usage: provision.py BASE KEYSTONE_URL MAGNUM_URL
"""

import json
import sys
import urllib.error
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
    base, ks, magnum_url = sys.argv[1:4]
    admin = password_auth(ks, "admin", "admin-secret", "admin")

    def by_name(collection, name, query=""):
        _, body = call("GET", f"{ks}/{collection}?name={name}{query}", token=admin)
        items = body[collection]
        return items[0]["id"] if items else None

    roles = {r["name"]: r["id"] for r in call("GET", f"{ks}/roles", token=admin)[1]["roles"]}
    ids = {"roles": roles, "projects": {}, "users": {}}
    for project in ("service", "demo", "alt"):
        _, body = call(
            "POST",
            f"{ks}/projects",
            {"project": {"name": project, "domain_id": "default", "enabled": True}},
            token=admin,
        )
        ids["projects"][project] = body["project"]["id"]
    ids["projects"]["admin"] = by_name("projects", "admin")
    ids["users"]["admin"] = by_name("users", "admin")

    grants = {
        "magnum": ("service", "service"),
        "demo": ("demo", "member"),
        "alt": ("alt", "member"),
        "reader": ("demo", "reader"),
    }
    for user, (project, role) in grants.items():
        pid = ids["projects"][project]
        _, body = call(
            "POST",
            f"{ks}/users",
            {
                "user": {
                    "name": user,
                    "domain_id": "default",
                    "password": f"{user}-secret",
                    "default_project_id": pid,
                    "enabled": True,
                }
            },
            token=admin,
        )
        uid = body["user"]["id"]
        ids["users"][user] = uid
        call("PUT", f"{ks}/projects/{pid}/users/{uid}/roles/{roles[role]}", token=admin)
        if user == "magnum":
            # As Magnum's devstack plugin makes it (`create_service_user "magnum" "admin"`):
            # what a cluster's user made in the cloud is deleted later as magnum.
            call("PUT", f"{ks}/projects/{pid}/users/{uid}/roles/{roles['admin']}", token=admin)

    _, body = call(
        "POST",
        f"{ks}/services",
        {
            "service": {
                "name": "magnum",
                "type": "container-infra",
                "description": "Container Infrastructure Management Service",
                "enabled": True,
            }
        },
        token=admin,
    )
    sid = body["service"]["id"]
    ids["service"] = sid
    ids["endpoints"] = {}
    for interface in ("public", "internal"):
        _, body = call(
            "POST",
            f"{ks}/endpoints",
            {
                "endpoint": {
                    "service_id": sid,
                    "interface": interface,
                    "url": magnum_url,
                    "region_id": "RegionOne",
                    "enabled": True,
                }
            },
            token=admin,
        )
        ids["endpoints"][interface] = body["endpoint"]["id"]

    # Every user can log in to its project.
    for user, (project, _) in grants.items():
        password_auth(ks, user, f"{user}-secret", project)

    with open(f"{base}/ids.json", "w") as f:
        json.dump(ids, f, indent=2)

    clouds = {"clouds": {}}
    for cloud, user, project in (
        ("ks-admin", "admin", "admin"),
        ("ks-magnum", "magnum", "service"),
        ("ks-demo", "demo", "demo"),
        ("ks-alt", "alt", "alt"),
        ("ks-reader", "reader", "demo"),
    ):
        clouds["clouds"][cloud] = {
            "auth": {
                "auth_url": ks,
                "username": user,
                "password": f"{user}-secret",
                "project_name": project,
                "user_domain_name": "Default",
                "project_domain_name": "Default",
            },
            "region_name": "RegionOne",
            "identity_api_version": 3,
            "interface": "public",
        }
    clouds["clouds"]["ks-admin-system"] = {
        "auth": {
            "auth_url": ks,
            "username": "admin",
            "password": "admin-secret",
            "user_domain_name": "Default",
            "system_scope": "all",
        },
        "region_name": "RegionOne",
        "identity_api_version": 3,
        "interface": "public",
    }
    # JSON is valid YAML: no PyYAML needed here.
    with open(f"{base}/clouds.yaml", "w") as f:
        json.dump(clouds, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except urllib.error.HTTPError as e:
        sys.exit(f"provision.py: {e.code} {e.reason}: {e.read()[:500]!r}")
