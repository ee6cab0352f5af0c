//! `labctl verify DIR`: check an evidence pack against its manifest.sha256 (exit 0 intact, 1 not).

use std::path::PathBuf;

use crate::exit;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The evidence pack.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let r = runner::verify::verify(&args.dir)?;
    for (what, list) in [
        ("changed", &r.mismatched),
        ("missing", &r.missing),
        ("not in the manifest", &r.unlisted),
        ("malformed manifest line", &r.malformed),
    ] {
        for f in list {
            println!("{what}: {f}");
        }
    }
    if r.ok() {
        println!("ok: {} file(s) match manifest.sha256", r.checked);
        Ok(exit::HELD)
    } else {
        println!("NOT intact: {}", args.dir.display());
        Ok(exit::ERROR)
    }
}
