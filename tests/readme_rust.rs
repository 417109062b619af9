//! README's Rust snippet, as written there (between `fn main` and its `Ok`), trains the model
//! the command line trains from the same C and γ.

use fwsvm::prelude::*;

#[test]
fn readme_rust_snippet_runs() -> Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(env!("CARGO_MANIFEST_DIR")).unwrap();
    let readme = std::fs::read_to_string("README.md").unwrap();
    assert!(
        readme.contains("let (model, _reports) = train(&ds, &params, &mut |_| Vec::new())?;"),
        "README's Rust snippet changed: update this test with it"
    );
    let ds = read_libsvm("data/a9a.xz".as_ref())?;
    let params = TrainParams {
        c: 1.0,
        gamma: Gamma::Value(0.064882),
        ..Default::default()
    };
    let (model, _reports) = train(&ds, &params, &mut |_| Vec::new())?;
    let path = dir.path().join("a9a.model");
    model.save(&path)?;
    std::env::set_current_dir(cwd).unwrap();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .starts_with("svm_type c_svc")
    );
    Ok(())
}
