#!/usr/bin/env bash
# The Dockerfile's steps without a container engine (this machine has the docker client but
# no daemon): reads ./Dockerfile and performs, in order,
#   builder stage   its COPYs into a staging dir (the stage's filesystem) and its RUN commands
#                   there, with the stage's ENV (cargo/rustc of this machine stand in for the
#                   rust image; CARGO_TARGET_DIR is the one scripts/test.sh exports,
#                   else the checkout's target/, so the release dependencies of
#                   `cargo build --release` are reused);
#   runtime stage   an empty root (plus the shared libraries the binary links, which
#                   debian:bookworm-slim provides), its RUN commands with useradd/groupadd
#                   writing that root's /etc (--prefix), its COPYs (also --from=build);
#   and then runs the image: ENTRYPOINT + CMD chrooted into that root as the USER, with the
#   image's ENV and WORKDIR (plus the -e overrides a `docker run` would pass: loopback port,
#   noauth, a SQLite file), checks that the process runs as that non-root uid, that
#   `GET /healthz` answers 200, that the HEALTHCHECK command succeeds as the same user, and
#   that no build tool (cargo, rustc, cc, gcc, a shell) is in the image root.
# Needs root (chroot, file ownership). Exits non-zero on any failure. scripts/test.sh calls it.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
CACHE="${MAGNUM_RS_CACHE:-$HOME/.cache/magnum-rs}"
exec python3 - "$ROOT" "$CACHE" <<'PY'
import json, os, re, shlex, shutil, socket, subprocess, sys, time, urllib.request

repo, cache = sys.argv[1], sys.argv[2]

def log(*a):
    print("image-steps:", *a, file=sys.stderr, flush=True)

def die(msg):
    log(msg)
    sys.exit(1)

# --- parse the Dockerfile: instructions with continuation lines joined ---
instructions = []
buf = ""
for line in open(os.path.join(repo, "Dockerfile"), encoding="utf-8"):
    s = line.rstrip("\n")
    if not buf and (not s.strip() or s.lstrip().startswith("#")):
        continue
    if s.endswith("\\"):
        buf += s[:-1] + " "
        continue
    buf += s
    word, _, rest = buf.strip().partition(" ")
    instructions.append((word.upper(), rest.strip()))
    buf = ""

# A fixed place (not a fresh temp dir) so the copied sources keep their paths and mtimes
# and cargo finds the cached build fresh; wiped before and after each run.
work = os.path.join(cache, "image-steps-work")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
stages = {}      # name -> root dir
children = []

def cleanup():
    for p in children:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)

def inside(root, path):
    return os.path.join(root, path.lstrip("/"))

def copy(src, dst):
    if os.path.isdir(src):
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        shutil.copy2(src, dst)

def env_pairs(rest):
    out = {}
    for tok in shlex.split(rest):
        k, _, v = tok.partition("=")
        out[k] = v
    return out

try:
    stage = None
    for word, rest in instructions:
        if word == "FROM":
            m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            image, name = m.group(1), (m.group(2) or str(len(stages)))
            root = os.path.join(work, "stage-" + name)
            os.makedirs(root)
            stage = {"name": name, "image": image, "root": root, "env": {}, "workdir": "/",
                     "user": None, "entrypoint": [], "cmd": [], "health": None, "builder": image.startswith("rust:")}
            stages[name] = stage
            log(f"FROM {image} (stage {name}) in {root}")
            if not stage["builder"]:
                # What debian:bookworm-slim brings that the runtime stage needs: a passwd and
                # group file with root, and (below, once the binary is copied) its libraries.
                etc = inside(root, "/etc")
                os.makedirs(etc)
                open(os.path.join(etc, "passwd"), "w").write("root:x:0:0:root:/root:/bin/sh\n")
                open(os.path.join(etc, "group"), "w").write("root:x:0:\n")
                open(os.path.join(etc, "shadow"), "w").write("root:*:19000:0:99999:7:::\n")
                open(os.path.join(etc, "gshadow"), "w").write("root:*::\n")
                if os.path.exists("/etc/login.defs"):
                    shutil.copy2("/etc/login.defs", etc)
                os.makedirs(inside(root, "/tmp"), mode=0o1777)
                os.chmod(inside(root, "/tmp"), 0o1777)
        elif word == "WORKDIR":
            stage["workdir"] = rest
            os.makedirs(inside(stage["root"], rest), exist_ok=True)
        elif word == "ENV":
            stage["env"].update(env_pairs(rest))
        elif word == "COPY":
            toks = shlex.split(rest)
            frm = None
            while toks[0].startswith("--"):
                flag = toks.pop(0)
                if flag.startswith("--from="):
                    frm = flag.split("=", 1)[1]
            *srcs, dst = toks
            base = stages[frm]["root"] if frm else repo
            target = dst if dst.startswith("/") else os.path.join(stage["workdir"], dst)
            for src in srcs:
                s = inside(base, src) if frm else os.path.join(base, src)
                d = inside(stage["root"], target)
                if target.endswith("/") or len(srcs) > 1:
                    d = os.path.join(d, os.path.basename(src.rstrip("/")) if not os.path.isdir(s) else "")
                copy(s, d)
            log(f"COPY {rest}")
        elif word == "RUN":
            env = dict(os.environ)
            env.update(stage["env"])
            if stage["builder"]:
                # CARGO_TARGET_DIR, else the checkout's own target/ (shared with `cargo
                # build --release`): the dependencies are compiled once (docker would cache
                # the layer).
                env.setdefault("CARGO_TARGET_DIR", os.path.join(repo, "target"))
                cwd = inside(stage["root"], stage["workdir"])
                log(f"RUN {rest}  (in {cwd})")
                subprocess.run(["sh", "-c", rest], cwd=cwd, env=env, check=True)
                # The stage's filesystem must hold what the build wrote under target/.
                if "CARGO_TARGET_DIR" in env:
                    rel = os.path.join(cwd, "target")
                    os.makedirs(rel, exist_ok=True)
                    shutil.copytree(os.path.join(env["CARGO_TARGET_DIR"], "release"),
                                    os.path.join(rel, "release"), dirs_exist_ok=True,
                                    ignore=shutil.ignore_patterns("build", "deps", "incremental", ".fingerprint"))
            else:
                # The same command, with the account tools writing the image root's /etc.
                cmd = re.sub(r"\b(useradd|groupadd)\b", lambda m: f"{m.group(1)} --prefix {shlex.quote(stage['root'])}", rest)
                log(f"RUN {rest}")
                subprocess.run(["sh", "-c", cmd], cwd=stage["root"], env=env, check=True)
        elif word == "USER":
            stage["user"] = rest
        elif word in ("ENTRYPOINT", "CMD"):
            stage[word.lower()] = json.loads(rest)
        elif word == "HEALTHCHECK":
            m = re.search(r"\bCMD\s+(\[.*\])\s*$", rest)
            stage["health"] = json.loads(m.group(1))
        elif word == "EXPOSE":
            stage["expose"] = rest
        else:
            die(f"unsupported instruction {word}")

    runtime = stage
    root = runtime["root"]
    entry = runtime["entrypoint"] + runtime["cmd"]
    binary = inside(root, entry[0])
    if not os.path.isfile(binary):
        die(f"{entry[0]} is not in the image")
    # The base image's shared libraries the binary links (debian-slim has them).
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        for path in re.findall(r"(/\S+)", line):
            if os.path.exists(path):
                copy(path, inside(root, path))
                real = os.path.realpath(path)
                copy(real, inside(root, real))

    # No build tools, no shell in the image root.
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f in ("cargo", "rustc", "cc", "gcc", "ld", "sh", "bash", "make"):
                die(f"build tool in the image: {os.path.join(dirpath, f)}")

    user = runtime["user"]
    uid, _, gid = user.partition(":")
    if not uid.isdigit():
        die("USER must be numeric (uid:gid) so Kubernetes can verify runAsNonRoot")
    if int(uid) == 0:
        die("the image runs as root")
    passwd = open(inside(root, "/etc/passwd")).read()
    if not re.search(rf"^[^:]+:x:{uid}:{gid or uid}:", passwd, re.M):
        die(f"uid {uid} has no account in the image's /etc/passwd: {passwd}")
    home = inside(root, runtime["workdir"])
    if os.stat(home).st_uid != int(uid):
        die(f"WORKDIR {runtime['workdir']} is not owned by {uid}")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    env.update(runtime["env"])
    # What `docker run -e …` would pass in this test.
    env.update({"MAGNUM_RS_BIND": f"127.0.0.1:{port}", "MAGNUM_RS_AUTH": "noauth",
                "MAGNUM_RS_DATABASE_URL": f"sqlite://{runtime['workdir']}/magnum-rs.db",
                "HOSTNAME": "image-steps"})
    logf = open(os.path.join(work, "serve.log"), "w")
    def enter_image():
        # What the container runtime does: the image root, its WORKDIR, its USER.
        os.chroot(root)
        os.chdir(runtime["workdir"])
        os.setgroups([])
        os.setgid(int(gid or uid))
        os.setuid(int(uid))
    log(f"running {entry} as {user} in {root} (port {port})")
    proc = subprocess.Popen(entry, env=env, stdout=logf, stderr=subprocess.STDOUT,
                            preexec_fn=enter_image)
    children.append(proc)
    deadline = time.time() + 60
    body = None
    while time.time() < deadline:
        if proc.poll() is not None:
            die(f"magnum-rs exited with {proc.returncode}:\n" + open(logf.name).read())
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    body = json.loads(r.read())
                    break
        except OSError:
            time.sleep(0.2)
    if body != {"status": "ok"}:
        die("GET /healthz did not answer 200 {\"status\":\"ok\"}:\n" + open(logf.name).read())
    status = open(f"/proc/{proc.pid}/status").read()
    uids = re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)
    if uids != uid:
        die(f"the server runs as uid {uids}, not {uid}")
    log(f"GET /healthz → 200 {body}; server uid {uids}")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
        ready = json.loads(r.read())
        if r.status != 200 or ready.get("status") != "ready":
            die(f"/readyz: {ready}")
    log(f"GET /readyz → 200 {ready}")
    health = runtime["health"]
    if not health:
        die("the Dockerfile has no HEALTHCHECK")
    r = subprocess.run(health, env=env, capture_output=True, text=True, timeout=30,
                       preexec_fn=enter_image)
    if r.returncode != 0:
        die(f"HEALTHCHECK {health} failed: {r.stdout}{r.stderr}")
    log(f"HEALTHCHECK {health} → 0")
    # The database file the server created belongs to the non-root user.
    db = inside(root, runtime["workdir"] + "/magnum-rs.db")
    if os.stat(db).st_uid != int(uid):
        die("the server's files are not owned by its user")
    log("image steps OK")
finally:
    cleanup()
PY
