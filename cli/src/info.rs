//! `fwsvm info`: the GPU adapters wgpu finds and what they allow.

use clap::Args;
use fwsvm::error::Result;

/// Options of `fwsvm info`.
#[derive(Debug, Args)]
pub struct InfoArgs {}

/// Runs `fwsvm info`.
pub fn run(_a: InfoArgs) -> Result<()> {
    println!(
        "fwsvm {}; {} CPU threads",
        crate::VERSION,
        rayon::current_num_threads()
    );
    #[cfg(feature = "gpu")]
    {
        let list = fwsvm::backend::gpu::list_adapters();
        if list.is_empty() {
            println!(
                "no GPU adapters (no Vulkan/GL driver found; WGPU_BACKEND={})",
                std::env::var("WGPU_BACKEND").unwrap_or_else(|_| "unset".into())
            );
        }
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        for a in &list {
            println!(
                "[{}] {} | {} | {:?}{} | f64 {} | max storage binding {:.0} MiB | max buffer {:.0} MiB | driver {}",
                a.index,
                a.name,
                a.backend,
                a.device_type,
                if a.is_hardware() { "" } else { " (software)" },
                if a.f64 { "yes" } else { "no" },
                mib(a.max_binding),
                mib(a.max_buffer),
                if a.driver.is_empty() { "-" } else { &a.driver }
            );
        }
        if !list.is_empty() {
            let name = |k: Option<usize>| {
                k.map(|k| format!("[{}] {}", k, list[k].name))
                    .unwrap_or_else(|| "the CPU (no hardware adapter)".into())
            };
            println!(
                "--backend auto uses {}; --backend gpu uses {}",
                name(fwsvm::backend::gpu::context::best(&list, false)),
                name(fwsvm::backend::gpu::context::best(&list, true))
            );
        }
    }
    #[cfg(not(feature = "gpu"))]
    println!("built without the `gpu` feature: CPU backend only");
    Ok(())
}
