#!/usr/bin/env python3
"""Creates neutron's schema on SQLite for scripts/openstack.sh.

neutron-db-manage cannot run neutron's alembic migrations on SQLite (the Mitaka migration
1df244e556f5 adds a unique constraint with ALTER, which SQLite lacks: alembic raises
"No support for ALTER of constraints in SQLite dialect"). neutron's own unit tests put their
SQLite schema together from the models instead; this does the same:

1. every table of neutron.db.migration.models.head's metadata (the models neutron's
   migration tests check against the migrations), created with create_all;
2. the one row-writing migration that matters on an empty database, c33da356b165
   (2023.2): the four default security group rule templates (egress IPv4/IPv6 for every
   group, ingress from the same group for the default groups), as that migration writes
   them;
3. `neutron-db-manage stamp heads`, so neutron-status and later upgrades see a current
   database.

Usage: neutron_db.py NEUTRON_CONF ML2_CONF   (run with the venv's python)
"""

import sys

from neutron.db.migration import cli
from neutron.db.migration.models import head
from oslo_config import cfg
from oslo_utils import uuidutils
import sqlalchemy as sa

TEMPLATES = "securitygroupdefaultrules"
INGRESS = "Legacy default SG rule for ingress traffic"
EGRESS = "Legacy default SG rule for egress traffic"


def main():
    neutron_conf, ml2_conf = sys.argv[1:3]
    argv = ["--config-file", neutron_conf, "--config-file", ml2_conf]
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.StrOpt("connection"), group="database")
    conf(argv, project="neutron")
    url = conf.database.connection
    if not url.startswith("sqlite:"):
        sys.exit(f"neutron_db.py: for SQLite only, not {url}")

    engine = sa.create_engine(url)
    metadata = head.get_metadata()
    with engine.begin() as conn:
        metadata.create_all(conn)
        std = metadata.tables["standardattributes"]
        rules = metadata.tables[TEMPLATES]
        if not conn.execute(sa.select(sa.func.count()).select_from(rules)).scalar():
            for direction, ethertype, remote_group, in_default, in_other, description in (
                ("egress", "IPv4", None, True, True, EGRESS),
                ("egress", "IPv6", None, True, True, EGRESS),
                ("ingress", "IPv4", "PARENT", True, False, INGRESS),
                ("ingress", "IPv6", "PARENT", True, False, INGRESS),
            ):
                std_id = conn.execute(
                    sa.insert(std).values(resource_type=TEMPLATES, description=description)
                ).inserted_primary_key[0]
                conn.execute(
                    sa.insert(rules).values(
                        id=uuidutils.generate_uuid(),
                        standard_attr_id=std_id,
                        direction=direction,
                        ethertype=ethertype,
                        remote_group_id=remote_group,
                        used_in_default_sg=in_default,
                        used_in_non_default_sg=in_other,
                    )
                )
    engine.dispose()

    sys.argv = ["neutron-db-manage"] + argv + ["stamp", "heads"]
    cli.main()


if __name__ == "__main__":
    main()
