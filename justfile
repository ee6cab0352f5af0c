# Developer shortcuts; every recipe is a plain command you can also run without `just`.

# Build every crate (debug).
build:
    cargo build --workspace

# The full test suite, as CI runs it (builds the images first).
test:
    scripts/test.sh

# Formatting and lints, as CI checks them.
lint:
    cargo fmt --all --check
    cargo clippy --workspace --all-targets -- -D warnings

# Static binaries and the container images (probelab/<name>:dev and :<git sha>); names pick some, e.g. `just images lab`.
images *NAMES:
    scripts/build-images.sh {{NAMES}}

# Everything CI does.
ci:
    bash .ci/run

# Run a lab on the local emulator (builds the images first), e.g. `just lab labs/startup-degraded.toml --profile quick`.
lab LAB *ARGS:
    scripts/lab.sh {{LAB}} {{ARGS}}

# Run a lab inside the probelab/lab container through deploy/local/compose.yaml, e.g. `just lab-in-container startup-degraded --profile quick`; the pack lands in evidence/.
lab-in-container NAME *ARGS:
    deploy/local/run.sh lab {{NAME}} {{ARGS}}
