//! A real 3-node Docker Swarm on this machine (tests/swarm/rig.sh): n1 manager, n2 and n3 workers
//! labelled exectl.role=app, each a fake remote host with its own address, sshd and engine. Dropping the
//! `Swarm` tears it all down.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};

pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/swarm/rig.sh");

pub struct Node {
    pub addr: String,
    pub hostname: String,
    /// The node's engine socket on this host.
    pub docker_sock: String,
}

pub struct Swarm {
    pub name: String,
    pub nodes: Vec<Node>,
    pub ssh_port: u16,
    pub key: PathBuf,
    pub known_hosts: PathBuf,
    /// Every node's engine as its SSH logins see it (exectl's --docker-socket).
    pub node_docker_socket: String,
    /// Last: released after the teardown.
    _rig: super::RigLock,
}

impl Swarm {
    /// Swarm `name` on the subnets from `index` (three: index..index+2), with `images` in every node.
    pub fn up(name: &str, index: u8, images: &[&str]) -> Swarm {
        let rig = super::rig_lock(name);
        let out = Command::new("bash")
            .args([SCRIPT, "up", name])
            .env("SWARM_INDEX", index.to_string())
            .env("SWARM_IMAGES", images.join(" "))
            .output()
            .expect("run tests/swarm/rig.sh");
        if !out.status.success() {
            let _ = Command::new("bash").args([SCRIPT, "down", name]).output();
            panic!(
                "rig.sh up {name} failed ({:?}):\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let kv: HashMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
        let get = |k: &str| -> String {
            kv.get(k)
                .unwrap_or_else(|| panic!("rig.sh summary lacks {k}:\n{text}"))
                .to_string()
        };
        Swarm {
            name: name.to_string(),
            nodes: (1..=3)
                .map(|k| Node {
                    addr: get(&format!("N{k}_ADDR")),
                    hostname: get(&format!("N{k}_HOSTNAME")),
                    docker_sock: get(&format!("N{k}_DOCKER_SOCK")),
                })
                .collect(),
            ssh_port: get("SSH_PORT").parse().unwrap(),
            key: get("KEY").into(),
            known_hosts: get("KNOWN_HOSTS").into(),
            node_docker_socket: get("NODE_DOCKER_SOCKET"),
            _rig: rig,
        }
    }

    /// The target flags of exectl for this swarm.
    pub fn target_args(&self) -> Vec<String> {
        vec![
            "--target".into(),
            format!("swarm+ssh://root@{}:{}", self.nodes[0].addr, self.ssh_port),
            "--identity".into(),
            self.key.display().to_string(),
            "--known-hosts".into(),
            self.known_hosts.display().to_string(),
            "--docker-socket".into(),
            self.node_docker_socket.clone(),
        ]
    }

    /// `docker ARGS` against node K's engine (1-based).
    pub fn docker(&self, k: usize, args: &[&str]) -> Output {
        Command::new("docker")
            .arg("-H")
            .arg(format!("unix://{}", self.nodes[k - 1].docker_sock))
            .args(args)
            .output()
            .expect("run docker")
    }

    /// Lines of `docker ARGS` on node K, which must succeed.
    pub fn lines(&self, k: usize, args: &[&str]) -> Vec<String> {
        let out = self.docker(k, args);
        assert!(
            out.status.success(),
            "docker {args:?} on n{k}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        super::rig_down(SCRIPT, &self.name);
    }
}
