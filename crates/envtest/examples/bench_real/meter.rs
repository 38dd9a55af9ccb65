//! Measuring one child process: wall time, CPU (this process's reaped children's `cutime` +
//! `cstime`), peak RSS (the child's polled `VmHWM`) and the requests and bytes the fault proxy
//! counted while it ran, as a [`Sample`]; and the per-field median of several samples. Reads
//! `/proc` and runs the measured commands; decides nothing about what is compared.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use apiary_envtest::proxy::FaultProxy;

/// What one measured child process cost.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub wall: Duration,
    pub cpu: Duration,
    pub peak_rss_kib: u64,
    pub requests: u64,
    pub bytes: u64,
}

/// This process's reaped children's user + system time, in clock ticks.
fn children_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the command name: field 3 (state) is index 0, so cutime (16) and cstime (17) are
    // indexes 13 and 14.
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(13) + field(14)
}

pub fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub struct Meter {
    pub ticks_per_second: u64,
}

impl Meter {
    /// Runs one command to completion, measuring it; fails when it exits non-zero.
    pub fn run(&self, proxy: &FaultProxy, command: &mut Command) -> Result<Sample, String> {
        let counts = proxy.counts();
        let ticks = children_ticks();
        let start = Instant::now();
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let pid = child.id();
        let mut peak = 0;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                break status;
            }
            peak = peak.max(vm_hwm_kib(pid).unwrap_or(0));
            std::thread::sleep(Duration::from_millis(2));
        };
        let wall = start.elapsed();
        let cpu_ticks = children_ticks().saturating_sub(ticks);
        if !status.success() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _unread = std::io::Read::read_to_string(&mut pipe, &mut stderr);
            }
            return Err(format!("{command:?} failed ({status}): {stderr}"));
        }
        let after = proxy.counts();
        Ok(Sample {
            wall,
            cpu: Duration::from_millis(cpu_ticks * 1000 / self.ticks_per_second),
            peak_rss_kib: peak,
            requests: after.requests - counts.requests,
            bytes: after.bytes_from_upstream - counts.bytes_from_upstream,
        })
    }

    /// Runs several commands in sequence as one measured step (their costs add up).
    pub fn run_all(&self, proxy: &FaultProxy, commands: &mut [Command]) -> Result<Sample, String> {
        let mut total = Sample {
            wall: Duration::ZERO,
            cpu: Duration::ZERO,
            peak_rss_kib: 0,
            requests: 0,
            bytes: 0,
        };
        for command in commands {
            let one = self.run(proxy, command)?;
            total.wall += one.wall;
            total.cpu += one.cpu;
            total.peak_rss_kib = total.peak_rss_kib.max(one.peak_rss_kib);
            total.requests += one.requests;
            total.bytes += one.bytes;
        }
        Ok(total)
    }
}

/// The median of each field over the samples (each field on its own).
pub fn median(samples: &[Sample]) -> Sample {
    fn mid<T: Ord + Copy>(mut values: Vec<T>) -> T {
        values.sort_unstable();
        values[values.len() / 2]
    }
    Sample {
        wall: mid(samples.iter().map(|s| s.wall).collect()),
        cpu: mid(samples.iter().map(|s| s.cpu).collect()),
        peak_rss_kib: mid(samples.iter().map(|s| s.peak_rss_kib).collect()),
        requests: mid(samples.iter().map(|s| s.requests).collect()),
        bytes: mid(samples.iter().map(|s| s.bytes).collect()),
    }
}
