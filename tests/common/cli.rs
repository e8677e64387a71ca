//! The real `openstack` CLI (python-openstackclient + python-magnumclient) against a
//! magnum-rs endpoint with noauth (`--os-auth-type none --os-endpoint …`).
//! `scripts/test.sh` installs the CLI and sets `MAGNUM_RS_OPENSTACK`; without it the tests
//! fail rather than pass silently.

use std::process::Command;

use super::server::Server;

pub struct Cli {
    pub bin: String,
    pub endpoint: String,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Cli {
    pub fn new(server: &Server) -> Cli {
        let bin = std::env::var("MAGNUM_RS_OPENSTACK").unwrap_or_else(|_| {
            panic!("MAGNUM_RS_OPENSTACK is not set: run scripts/test.sh, which installs the openstack CLI")
        });
        Cli {
            bin,
            endpoint: server.endpoint(),
        }
    }

    pub fn run(&self, args: &[&str]) -> Out {
        let out = Command::new(&self.bin)
            .args(["--os-auth-type", "none", "--os-endpoint", &self.endpoint])
            .args(args)
            .output()
            .expect("run openstack");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and requires exit 0.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.run(args);
        assert_eq!(
            o.code, 0,
            "openstack {args:?} failed: {}{}",
            o.stdout, o.stderr
        );
        o.stdout
    }

    /// `-f value -c FIELD` of a show command.
    pub fn field(&self, args: &[&str], field: &str) -> String {
        let mut a = args.to_vec();
        a.extend(["-f", "value", "-c", field]);
        self.ok(&a).trim().to_string()
    }

    /// Polls a show command until `field` equals `want` (bounded; the operations worker runs
    /// in the server process).
    pub fn wait_field(&self, args: &[&str], field: &str, want: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut last = String::new();
        while std::time::Instant::now() < deadline {
            last = self.field(args, field);
            if last == want {
                return;
            }
        }
        panic!("{args:?} {field}: wanted {want}, last saw {last}");
    }

    /// `coe cluster template create k8s-template` (kubernetes, kube_tag v1.30.4), as the
    /// end-to-end tests start.
    pub fn create_k8s_template(&self) {
        self.ok(&[
            "coe",
            "cluster",
            "template",
            "create",
            "k8s-template",
            "--coe",
            "kubernetes",
            "--image",
            "ubuntu-2204-kube",
            "--external-network",
            "public",
            "--master-lb-enabled",
            "--labels",
            "kube_tag=v1.30.4",
        ]);
    }
}
