//! The facts of the machine chaudit runs on (src/collect/host.rs reads them).

use std::collections::BTreeMap;

use crate::facts::derived;

fact_keys! {
    Host "host", built;
    UNAVAILABLE: BTreeMap<String, String> = "unavailable", "host facts that could not be read, and why";
    TCP_SLOW_START_AFTER_IDLE: Option<String> = "tcp_slow_start_after_idle", "net.ipv4.tcp_slow_start_after_idle";
    ROUTES: Vec<derived::Route> = "routes", "`ip route show`";
    THP_ENABLED: String = "thp_enabled", "transparent huge pages: the selected mode (always, madvise, never)";
    THP_DEFRAG: String = "thp_defrag", "transparent huge page defrag: the selected mode";
    OVERCOMMIT_MEMORY: u64 = "overcommit_memory", "vm.overcommit_memory";
    ZONE_RECLAIM_MODE: u64 = "zone_reclaim_mode", "vm.zone_reclaim_mode";
    CLOCK_SOURCE: String = "clock_source", "the current clock source";
    CPU_GOVERNOR: Option<String> = "cpu_governor", "cpu0's frequency governor (null: no frequency scaling)";
    PID_MAX: u64 = "pid_max", "kernel.pid_max";
    THREADS_MAX: u64 = "threads_max", "kernel.threads-max";
    FILE_MAX: u64 = "file_max", "fs.file-max";
    TASK_DELAYACCT: u64 = "task_delayacct", "kernel.task_delayacct";
    SWAP_TOTAL_KB: u64 = "swap_total_kb", "SwapTotal of /proc/meminfo";
    DATA_PATH_FILESYSTEM: Option<String> = "data_path_filesystem",
        "the filesystem type of /var/lib/clickhouse/'s mount";
    SERVER_MAX_PROCESSES: u64 = "server_max_processes", "RLIMIT_NPROC (soft) of the running clickhouse-server";
    MEM_TOTAL_KB: u64 = "mem_total_kb", "MemTotal of /proc/meminfo";
    KERNEL_RELEASE: String = "kernel_release", "kernel.osrelease";
    KERNEL_VERSION_NUMBER: u64 = "kernel_version_number", "major * 1,000,000 + minor * 1,000 + patch";
    BLOCK_DEVICES: Vec<derived::BlockDevice> = "block_devices", "/sys/block (loop, ram and zram left out)";
    THERMAL_THROTTLE_EVENTS: Option<u64> = "thermal_throttle_events",
        "core_throttle_count summed over the CPUs (null: no counters)";
    ECC_CORRECTED_ERRORS: Option<u64> = "ecc_corrected_errors", "EDAC ce_count summed (null: no EDAC)";
    ECC_UNCORRECTED_ERRORS: Option<u64> = "ecc_uncorrected_errors", "EDAC ue_count summed (null: no EDAC)";
}
