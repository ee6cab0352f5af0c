#!/usr/bin/env bash
# Builds probelab's container images from this workspace, with no registry:
#   1. the static binaries, ONCE, on the host (glibc, +crt-static, Cargo.toml's `image` profile);
#   2. one `docker build` per image from a minimal context (the binary + the host's CA bundle),
#      every Dockerfile `FROM scratch`, the images' builds running side by side;
#   3. tags probelab/<name>:dev and probelab/<name>:<git short sha>[-dirty], OCI labels;
#   4. prints each image's size and fails if one exceeds its limit (20 MB; the lab image 50 MB).
#
# Usage: scripts/build-images.sh [--with-labctl] [NAME...]   (or: just images)
#   With names (e.g. `lab`), only those images are built; without, every image below.
#   --with-labctl also builds the static labctl in the same cargo invocation (same profile and
#   target, so nothing is compiled twice): scripts/lab.sh runs that binary on the host.
# Honours CARGO_TARGET_DIR. Needs a running Docker engine and, for the CA bundle, the
# ca-certificates package (installed with apt-get when absent and running as root).
set -euo pipefail
cd "$(dirname "$0")/.."

# name        crate(s)  binary(ies)   [extra]  (the Dockerfile is images/<name>/Dockerfile)
# Lists are comma-separated; `extra` is a directory of this repository copied into the build
# context under its own name (the lab image carries labs/). Every listed image is built; a listed
# crate that is missing is an error, never a skip.
IMAGES=(
  "subject    subject   subject"
  "loadgen    loadgen   loadgen"
  "perturbation-sampler  sampler  perturbation-sampler"
  "audit      audit     audit"
  "lab        labctl,localplane  labctl,localplane  labs"
)

with_labctl=
if [ "${1:-}" = --with-labctl ]; then
  with_labctl=1
  shift
fi

if [ $# -gt 0 ]; then
  wanted=()
  for want in "$@"; do
    # A name given twice (lab.sh adds loadgen and the sampler to a lab's own images) is built once.
    [[ " ${seen:-} " != *" $want "* ]] || continue
    seen="${seen:-} $want"
    found=
    for entry in "${IMAGES[@]}"; do
      read -r name _ <<<"$entry"
      [ "$name" != "$want" ] || { wanted+=("$entry"); found=1; }
    done
    [ -n "$found" ] || { echo "build-images: no image '$want' (known: $(for e in "${IMAGES[@]}"; do read -r n _ <<<"$e"; printf '%s ' "$n"; done))" >&2; exit 2; }
  done
  IMAGES=("${wanted[@]}")
fi

TARGET=x86_64-unknown-linux-gnu
# Cargo.toml's `[profile.image]` (what it costs and why: its comment there).
PROFILE=image
MAX_BYTES=$((20 * 1000 * 1000))
# The lab image is the operator's tool, not a workload: it holds labctl (the orchestrator, the
# analysis, the SVG charts and localplane linked in) plus the standalone localplane binary, and
# it never runs in Container Apps. It gets its own, still enforced, limit: 50 MB since the
# emulator and orchestrator crates are built at opt-level 0 (Cargo.toml's `image` profile), which
# made the two binaries ~45 MB together (stripped) where they were ~29 MB.
LAB_MAX_BYTES=$((50 * 1000 * 1000))
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
start=$(date +%s)
step() { echo "==> [build-images $(($(date +%s) - start))s] $*"; }
die() { echo "build-images: $*" >&2; exit 1; }

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "the Docker engine is unreachable (is the daemon running?)"

crates=()
bins=()
for entry in "${IMAGES[@]}"; do
  read -r name crate_list bin_list extra <<<"$entry"
  IFS=, read -r -a image_crates <<<"$crate_list"
  IFS=, read -r -a image_bins <<<"$bin_list"
  for crate in "${image_crates[@]}"; do
    [ -f "crates/$crate/Cargo.toml" ] || die "image '$name' is listed but crates/$crate does not exist"
    crates+=(-p "$crate")
  done
  for bin in "${image_bins[@]}"; do
    bins+=(--bin "$bin")
  done
  [ -f "images/$name/Dockerfile" ] || die "image '$name' is listed but images/$name/Dockerfile does not exist"
  [ -z "$extra" ] || [ -d "$extra" ] || die "image '$name' needs $extra/, which does not exist"
done
if [ -n "$with_labctl" ] && [[ " ${bins[*]} " != *" labctl "* ]]; then
  crates+=(-p labctl)
  bins+=(--bin labctl)
fi

if [ ! -s "$CA_BUNDLE" ]; then
  step "installing ca-certificates (no $CA_BUNDLE on this host)"
  [ "$(id -u)" = 0 ] || die "$CA_BUNDLE is missing; install the ca-certificates package"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q ca-certificates >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ca-certificates >/dev/null; }
  [ -s "$CA_BUNDLE" ] || die "ca-certificates installed but $CA_BUNDLE is still missing"
fi

# Target-specific flags apply to the binaries only (build scripts and proc macros stay dynamic),
# which is why --target is explicit. A RUSTFLAGS in the environment would override them: refuse.
if [ -n "${RUSTFLAGS:-}${CARGO_ENCODED_RUSTFLAGS:-}" ]; then
  die "unset RUSTFLAGS/CARGO_ENCODED_RUSTFLAGS: they override the +crt-static target flags"
fi
step "cargo build --profile $PROFILE --target $TARGET ${crates[*]} ${bins[*]}"
CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static" \
  cargo build --profile "$PROFILE" --target "$TARGET" "${crates[@]}" "${bins[@]}"

target_dir="${CARGO_TARGET_DIR:-target}"
out_dir="$target_dir/$TARGET/$PROFILE"

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
short=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# A tree with uncommitted changes to tracked files does not get the bare commit's tag.
if [ "$revision" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
  short="$short-dirty"
fi
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
source_url=$(sed -n '/^\[workspace.package\]/,/^\[/s/^repository *= *"\(.*\)"/\1/p' Cargo.toml)

context=$(mktemp -d "${TMPDIR:-/tmp}/probelab-images.XXXXXX")
# A failure stops the builds still running before their context goes.
trap 'running=$(jobs -p); [ -z "$running" ] || kill $running 2>/dev/null || true; rm -rf "$context"' EXIT

# Each image's context, then every `docker build` at once: the legacy builder spends its time
# committing one container per Dockerfile instruction, not on CPU, so three builds in parallel
# take about as long as one (5 s each here; the first command of README builds three).
pids=()
for entry in "${IMAGES[@]}"; do
  read -r name crate_list bin_list extra <<<"$entry"
  IFS=, read -r -a image_bins <<<"$bin_list"
  dir="$context/$name"
  mkdir -p "$dir"
  for bin in "${image_bins[@]}"; do
    binary="$out_dir/$bin"
    [ -x "$binary" ] || die "$binary was not built"
    # A dynamically linked binary has a PT_INTERP header and cannot run FROM scratch.
    if LC_ALL=C readelf -lW "$binary" | grep -q 'INTERP'; then
      die "$binary is dynamically linked (the +crt-static flags did not apply)"
    fi
    cp "$binary" "$dir/$bin"
  done
  [ -z "$extra" ] || cp -R "$extra" "$dir/$extra"
  cp "$CA_BUNDLE" "$dir/ca-certificates.crt"
  cp "images/$name/Dockerfile" "$dir/Dockerfile"
  step "docker build probelab/$name:dev (probelab/$name:$short)"
  docker build -q \
    --build-arg "VERSION=$version" \
    --build-arg "REVISION=$revision" \
    --build-arg "SOURCE=$source_url" \
    --label "org.probelab.image=$name" \
    -t "probelab/$name:dev" -t "probelab/$name:$short" \
    "$dir" >"$context/$name.log" 2>&1 &
  pids+=($!)
done

failed=0
report=()
for i in "${!IMAGES[@]}"; do
  read -r name _ <<<"${IMAGES[$i]}"
  if ! wait "${pids[$i]}"; then
    echo "build-images: docker build of probelab/$name failed:" >&2
    grep -v -e '^DEPRECATED: The legacy builder' -e 'buildx' -e '^ *$' "$context/$name.log" >&2 || true
    failed=1
    continue
  fi
  size=$(docker image inspect -f '{{.Size}}' "probelab/$name:dev")
  report+=("$(awk -v n="probelab/$name" -v s="$size" -v t="$short" 'BEGIN { printf "%-22s %7.2f MB  (:dev, :%s)", n, s / 1e6, t }')")
  limit=$MAX_BYTES
  [ "$name" != lab ] || limit=$LAB_MAX_BYTES
  if [ "$size" -gt "$limit" ]; then
    echo "build-images: probelab/$name is $size bytes, over its $((limit / 1000000)) MB limit" >&2
    failed=1
  fi
done

# Rebuilds leave the previous :dev untagged; remove only such dangling images of ours.
docker image prune -f --filter "label=org.probelab.image" >/dev/null

step "images"
[ ${#report[@]} -eq 0 ] || printf '  %s\n' "${report[@]}"
[ "$failed" = 0 ] || die "not every image was built or within its limit (above)"
step "done"
