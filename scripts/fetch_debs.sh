#!/usr/bin/env bash
# Downloads (does not install) the Debian packages a GPU machine needs to build and
# test vtllm without network or Debian dev packages, into the ignored folder .deb/.
# scripts/gpu_test.sh unpacks them into a private prefix there. Run on a Debian 12
# machine with network (the development machine); carry .deb/ to the GPU machine.
# Add a package here when the tree's CMake starts needing one.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${DEB_DIR:-.deb}

packages=(
  # tests and benchmarks (static gtest/gmock; benchmark ships only a shared library)
  libgtest-dev libgmock-dev googletest libbenchmark-dev libbenchmark1debian
  # header-only JSON
  nlohmann-json3-dev
  # tokenizer regexes and Unicode normalisation (static .a in the -dev packages;
  # the runtime libraries make their .so links resolve)
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  libutf8proc-dev libutf8proc2
  # HTTP server: Boost.Asio + Boost.Beast (header-only; the one Boost package needed)
  libboost1.81-dev
  # HTTP client of `vtllm bench serve` (header + Debian's compiled library)
  libcpp-httplib-dev libcpp-httplib0.11
  # cpp-httplib's pkg-config file requires these (it was built with TLS, zlib, brotli)
  libssl-dev zlib1g-dev libbrotli-dev libbrotli1
  # image decoding (libpng, libjpeg-turbo, libwebp, giflib) and their runtime libraries
  libpng-dev libpng16-16 libjpeg62-turbo-dev libjpeg62-turbo libwebp-dev libwebp7
  libwebpdemux2 libwebpmux3 libgif-dev libgif7
  # pkg-config, for GPU machines that lack it
  pkgconf-bin libpkgconf3
)

command -v apt-get >/dev/null || { echo "fetch_debs: apt-get not found (run this on Debian 12)" >&2; exit 1; }
mkdir -p "$dest"
cd "$dest"
# apt-get download runs as the _apt user when it can; a folder it cannot write makes
# it fall back to downloading as the caller, which is fine (the warning is noise).
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
missing=0
for p in "${packages[@]}"; do
  if ! ls "${p}"_*.deb >/dev/null 2>&1; then
    echo "fetch_debs: $p was not downloaded" >&2
    missing=1
  fi
done
[ "$missing" -eq 0 ] || exit 1
ls -1 ./*.deb > MANIFEST
echo "fetch_debs: $(wc -l < MANIFEST) packages in $dest/ ($(du -sh . | cut -f1))"
