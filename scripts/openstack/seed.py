#!/usr/bin/env python3
"""Seeds the OpenStack services scripts/openstack.sh runs with what magnum-rs's tests use,
through the real `openstack` CLI (scripts/venv.sh cli) and the clouds of Keystone's
clouds.yaml (OS_CLIENT_CONFIG_FILE):

* as admin (ks-admin): public flavors m1.small (1 vCPU, 2 GiB, 20 GB), m1.medium (2, 4 GiB,
  40 GB), m1.large (4, 8 GiB, 80 GB); public images `ubuntu-2204-kube` (os_distro=ubuntu,
  hw_disk_bus=scsi) and `fedora-coreos` (os_distro=fedora-coreos), each a 64 KiB raw file;
  the external flat network `public` (router:external, physical network `public`) with
  subnet `public-subnet` 172.24.4.0/24 without DHCP; the volume type `ssd` beside Cinder's
  `__DEFAULT__`;
* as demo (ks-demo): the network `private` with subnet `private-subnet` 10.0.0.0/24, and the
  keypair `default` (an ed25519 key made here; the private half stays in BASE/seed/).

Independent chains run side by side. Every command and its output go to BASE/log/seed.log.
Merges the ids with BASE/keystone-ids.json into BASE/openstack.json.

Usage: seed.py BASE OPENSTACK_CLI
"""

import concurrent.futures
import json
import os
import subprocess
import sys
import threading

LOCK = threading.Lock()


def main():
    base, cli = sys.argv[1:3]
    seed = os.path.join(base, "seed")
    os.makedirs(seed, exist_ok=True)
    log = open(os.path.join(base, "log", "seed.log"), "a")

    def osc(cloud, *args):
        cmd = [cli, "--os-cloud", cloud, *args, "-f", "json"]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        with LOCK:
            log.write(f"$ openstack --os-cloud {cloud} {' '.join(args)} -f json  # rc={res.returncode}\n")
            log.write(res.stdout + res.stderr + "\n")
            log.flush()
        if res.returncode != 0:
            raise RuntimeError(f"openstack --os-cloud {cloud} {' '.join(args)}: {res.stderr.strip()[-800:]}")
        return json.loads(res.stdout) if res.stdout.strip() else None

    image_file = os.path.join(seed, "tiny.img")
    with open(image_file, "wb") as f:
        f.write(b"\0" * 65536)
    key = os.path.join(seed, "default-key")
    for path in (key, key + ".pub"):
        if os.path.exists(path):
            os.remove(path)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "demo@magnum-rs",
                    "-f", key], check=True)

    def flavors():
        out = {}
        for name, vcpus, ram, disk in (("m1.small", 1, 2048, 20), ("m1.medium", 2, 4096, 40),
                                       ("m1.large", 4, 8192, 80)):
            out[name] = osc("ks-admin", "flavor", "create", name, "--public", "--vcpus",
                            str(vcpus), "--ram", str(ram), "--disk", str(disk))["id"]
        return "flavors", out

    def images():
        out = {}
        for name, props in (("ubuntu-2204-kube", ("os_distro=ubuntu", "hw_disk_bus=scsi")),
                            ("fedora-coreos", ("os_distro=fedora-coreos",))):
            args = ["image", "create", name, "--public", "--disk-format", "raw",
                    "--container-format", "bare", "--file", image_file]
            for p in props:
                args += ["--property", p]
            out[name] = osc("ks-admin", *args)["id"]
        return "images", out

    def public_network():
        net = osc("ks-admin", "network", "create", "public", "--external",
                  "--provider-network-type", "flat", "--provider-physical-network", "public")
        sub = osc("ks-admin", "subnet", "create", "public-subnet", "--network", net["id"],
                  "--subnet-range", "172.24.4.0/24", "--gateway", "172.24.4.1", "--no-dhcp",
                  "--allocation-pool", "start=172.24.4.10,end=172.24.4.250")
        return "public", {"network": net["id"], "subnet": sub["id"]}

    def private_network():
        net = osc("ks-demo", "network", "create", "private")
        sub = osc("ks-demo", "subnet", "create", "private-subnet", "--network", net["id"],
                  "--subnet-range", "10.0.0.0/24")
        return "private", {"network": net["id"], "subnet": sub["id"]}

    def keypair():
        kp = osc("ks-demo", "keypair", "create", "default", "--public-key", key + ".pub")
        return "keypair", {"name": kp["name"], "fingerprint": kp["fingerprint"],
                           "user": "demo", "private_key_file": key}

    def volume_types():
        ssd = osc("ks-admin", "volume", "type", "create", "ssd", "--public")
        types = {t["Name"]: t["ID"] for t in osc("ks-admin", "volume", "type", "list")}
        types["ssd"] = ssd["id"]
        return "volume_types", types

    ids = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        jobs = [pool.submit(f) for f in (public_network, private_network, images, flavors,
                                         keypair, volume_types)]
        for job in jobs:
            name, value = job.result()
            ids[name] = value
    ids["networks"] = {"public": ids.pop("public"), "private": ids.pop("private")}

    with open(os.path.join(base, "keystone-ids.json")) as f:
        ids["keystone"] = json.load(f)
    with open(os.path.join(base, "openstack.json"), "w") as f:
        json.dump(ids, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit(f"seed.py: {e}")
