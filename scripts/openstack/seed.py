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

Each cloud's commands go to one `openstack` process on its standard input (the CLI's
interactive mode reads commands from a non-terminal stdin): one Python start-up and one token
per cloud instead of one per command, about 1 s instead of 3-9 s each on a busy machine.
The two processes run side by side. Every command must print one JSON document (-f json);
otherwise the seed fails (the interactive mode's exit status is 1 whatever happens). Commands and output go to
BASE/log/seed.log. The ids, with BASE/keystone-ids.json, go to BASE/openstack.json.

Usage: seed.py BASE OPENSTACK_CLI
"""

import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import threading
import time

LOCK = threading.Lock()


def main():
    base, cli = sys.argv[1:3]
    seed = os.path.join(base, "seed")
    os.makedirs(seed, exist_ok=True)
    log = open(os.path.join(base, "log", "seed.log"), "a")

    def batch(cloud, commands):
        """Runs COMMANDS (argument lists) in one CLI process; returns their JSON outputs."""
        script = "".join(
            shlex.join(cmd) + " -f json\n" for cmd in commands
        )
        t0 = time.monotonic()
        res = subprocess.run([cli], input=script, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "OS_CLOUD": cloud})
        took = time.monotonic() - t0
        docs, pos, dec = [], 0, json.JSONDecoder()
        out = res.stdout
        while True:
            while pos < len(out) and out[pos].isspace():
                pos += 1
            if pos >= len(out):
                break
            doc, pos = dec.raw_decode(out, pos)
            docs.append(doc)
        with LOCK:
            log.write(f"# OS_CLOUD={cloud} openstack <<EOF  (rc={res.returncode}, {took:.1f} s)\n"
                      f"{script}EOF\n{res.stdout}{res.stderr}\n")
            log.flush()
        # The interactive mode exits 1 at the end of its input whatever happened, and goes on
        # after a failed command: a command failed when its JSON document is missing.
        if len(docs) != len(commands):
            raise RuntimeError(f"openstack (OS_CLOUD={cloud}) printed {len(docs)} results for "
                               f"{len(commands)} commands: "
                               f"{res.stderr.strip()[-800:]} (see {base}/log/seed.log)")
        return docs

    image_file = os.path.join(seed, "tiny.img")
    with open(image_file, "wb") as f:
        f.write(b"\0" * 65536)
    key = os.path.join(seed, "default-key")
    for path in (key, key + ".pub"):
        if os.path.exists(path):
            os.remove(path)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "demo@magnum-rs",
                    "-f", key], check=True)

    flavors = (("m1.small", 1, 2048, 20), ("m1.medium", 2, 4096, 40), ("m1.large", 4, 8192, 80))
    images = (("ubuntu-2204-kube", ("os_distro=ubuntu", "hw_disk_bus=scsi")),
              ("fedora-coreos", ("os_distro=fedora-coreos",)))
    admin = []
    for name, vcpus, ram, disk in flavors:
        admin.append(["flavor", "create", name, "--public", "--vcpus", str(vcpus), "--ram",
                      str(ram), "--disk", str(disk)])
    for name, props in images:
        cmd = ["image", "create", name, "--public", "--disk-format", "raw",
               "--container-format", "bare", "--file", image_file]
        for p in props:
            cmd += ["--property", p]
        admin.append(cmd)
    admin += [
        ["network", "create", "public", "--external", "--provider-network-type", "flat",
         "--provider-physical-network", "public"],
        ["subnet", "create", "public-subnet", "--network", "public", "--subnet-range",
         "172.24.4.0/24", "--gateway", "172.24.4.1", "--no-dhcp", "--allocation-pool",
         "start=172.24.4.10,end=172.24.4.250"],
        ["volume", "type", "create", "ssd", "--public"],
        ["volume", "type", "list"],
    ]
    demo = [
        ["network", "create", "private"],
        ["subnet", "create", "private-subnet", "--network", "private", "--subnet-range",
         "10.0.0.0/24"],
        ["keypair", "create", "default", "--public-key", key + ".pub"],
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        admin_job = pool.submit(batch, "ks-admin", admin)
        demo_job = pool.submit(batch, "ks-demo", demo)
        a, d = admin_job.result(), demo_job.result()

    ids = {
        "flavors": {f[0]: a[i]["id"] for i, f in enumerate(flavors)},
        "images": {im[0]: a[3 + i]["id"] for i, im in enumerate(images)},
        "networks": {
            "public": {"network": a[5]["id"], "subnet": a[6]["id"]},
            "private": {"network": d[0]["id"], "subnet": d[1]["id"]},
        },
        "volume_types": {t["Name"]: t["ID"] for t in a[8]},
        "keypair": {"name": d[2]["name"], "fingerprint": d[2]["fingerprint"], "user": "demo",
                    "private_key_file": key},
    }
    with open(os.path.join(base, "keystone-ids.json")) as f:
        ids["keystone"] = json.load(f)
    with open(os.path.join(base, "openstack.json"), "w") as f:
        json.dump(ids, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as e:
        sys.exit(f"seed.py: {e}")
