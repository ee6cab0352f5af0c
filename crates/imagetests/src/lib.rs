//! imagetests: black-box tests of the container images, in `tests/` (this library is empty).
//!
//! They run the images `scripts/build-images.sh` tagged `probelab/<name>:dev` with testcontainers
//! (through `testkit`), publish ports on 127.0.0.1 only, and check from outside what the issue
//! contracts promise: bind-late startup, probes, zombie hangs, each SIGTERM shutdown mode reaching
//! the binary as PID 1, intact JSON lines in `docker logs`, and loadgen reaching a subject by name
//! on a user-defined network with its buckets adding up and attributing by revision.
