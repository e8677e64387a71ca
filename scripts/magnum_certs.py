"""A cluster's certificates through Magnum 23's own cert manager (x509keypair), on a
database both Magnum and magnum-rs serve. Run by `scripts/magnum-db.sh certs DBNAME ...`
inside the magnum venv:

    python magnum_certs.py --config-file <magnum.conf> generate CLUSTER_UUID
        Magnum's conductor step at create (generate_certificates_to_cluster), saved on the
        cluster as the conductor saves it.
    python magnum_certs.py --config-file <magnum.conf> read CLUSTER_UUID CSR_FILE
        What Magnum serves and signs with: the three CAs (get_cluster_ca_certificate), the
        client certificate with its key opened (get_cluster_magnum_cert), and CSR_FILE signed
        by the cluster CA (sign_node_certificate).

Prints one JSON object on stdout.
"""
import json
import sys

from magnum.common import context as magnum_context
from magnum.common import service
from magnum.conductor.handlers.common import cert_manager
from magnum import objects


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


def main():
    args = sys.argv[1:]
    cmd_at = next(i for i, a in enumerate(args) if a in ("generate", "read"))
    service.prepare_service([sys.argv[0]] + args[:cmd_at])
    cmd, uuid, rest = args[cmd_at], args[cmd_at + 1], args[cmd_at + 2:]
    ctx = magnum_context.make_admin_context(all_tenants=True)
    cluster = objects.Cluster.get_by_uuid(ctx, uuid)
    if cmd == "generate":
        cert_manager.generate_certificates_to_cluster(cluster, context=ctx)
        cluster.save()
        out = {"ca_cert_ref": cluster.ca_cert_ref}
    else:
        with open(rest[0]) as f:
            csr = f.read()
        magnum_cert = cert_manager.get_cluster_magnum_cert(cluster, context=ctx)
        out = {
            "ca": _text(cert_manager.get_cluster_ca_certificate(
                cluster, ctx).get_certificate()),
            "etcd": _text(cert_manager.get_cluster_ca_certificate(
                cluster, ctx, "etcd").get_certificate()),
            "front_proxy": _text(cert_manager.get_cluster_ca_certificate(
                cluster, ctx, "front-proxy").get_certificate()),
            "client": _text(magnum_cert.get_certificate()),
            "client_key_opened": "PRIVATE KEY" in _text(
                magnum_cert.get_decrypted_private_key()),
            "signed": _text(cert_manager.sign_node_certificate(
                cluster, csr, context=ctx)),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
