"""Minimal safetensors reader + index-aware checkpoint loader for the PyTorch reference.

Written from the format description (no safetensors package exists on this machine):
  file  = u64 little-endian N | N bytes of JSON header | data area
  header = {"NAME": {"dtype": "BF16", "shape": [r, c], "data_offsets": [begin, end]}, ...,
            "__metadata__": {"k": "v"}}   (offsets relative to the start of the data area)
A checkpoint directory holds either model.safetensors, or model.safetensors.index.json
  {"metadata": {...}, "weight_map": {"NAME": "model-00001-of-0000n.safetensors", ...}}
plus the shards it names.

Tensors come back as torch tensors with the stored shape:
  BF16 -> torch.bfloat16 (read as uint16, widened to the fp32 bit pattern by << 16, then cast: exact)
  F32  -> torch.float32,  F16 -> torch.float16,  U8 -> torch.uint8,  I8/I32/I64 -> matching ints.
Used only under /usr/bin/python3 (Debian python3-torch + python3-numpy).
"""

import json
import os
import struct

import numpy as np
import torch

# dtype name -> (numpy dtype of the stored bytes, bytes per element)
_DTYPES = {
    "BF16": (np.uint16, 2),
    "F16": (np.float16, 2),
    "F32": (np.float32, 4),
    "F64": (np.float64, 8),
    "U8": (np.uint8, 1),
    "I8": (np.int8, 1),
    "I16": (np.int16, 2),
    "I32": (np.int32, 4),
    "I64": (np.int64, 8),
    "BOOL": (np.bool_, 1),
}


class SafetensorsError(Exception):
    pass


def bf16_bits_to_tensor(bits):
    """uint16 numpy array of bf16 bit patterns -> torch.bfloat16 tensor of the same shape (exact)."""
    wide = bits.astype(np.uint32) << np.uint32(16)
    f32 = wide.view(np.float32)
    return torch.from_numpy(f32.copy()).to(torch.bfloat16)


def read_header(path):
    """Returns (header dict without __metadata__, metadata dict, data-area offset in the file)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise SafetensorsError(f"{path}: shorter than the 8-byte header length")
        (n,) = struct.unpack("<Q", head)
        if 8 + n > size:
            raise SafetensorsError(f"{path}: header length {n} runs past the end of the file ({size} bytes)")
        header = json.loads(f.read(n).decode("utf-8"))
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {}) or {}
    return header, metadata, 8 + n


def load_file(path):
    """All tensors of one safetensors file: dict name -> torch tensor."""
    header, _, data_start = read_header(path)
    with open(path, "rb") as f:
        f.seek(data_start)
        data = f.read()
    out = {}
    spans = []
    for name, info in header.items():
        dtype = info.get("dtype")
        if dtype not in _DTYPES:
            raise SafetensorsError(f"{path}: tensor {name}: unsupported dtype {dtype!r}")
        np_dtype, itemsize = _DTYPES[dtype]
        shape = [int(d) for d in info["shape"]]
        if any(d < 0 for d in shape):
            raise SafetensorsError(f"{path}: tensor {name}: negative dimension in {shape}")
        begin, end = (int(v) for v in info["data_offsets"])
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= begin <= end <= len(data)):
            raise SafetensorsError(f"{path}: tensor {name}: range [{begin}, {end}) outside the data area "
                                   f"({len(data)} bytes)")
        if end - begin != numel * itemsize:
            raise SafetensorsError(f"{path}: tensor {name}: {end - begin} bytes for shape {shape} {dtype} "
                                   f"(expected {numel * itemsize})")
        spans.append((begin, end, name))
        arr = np.frombuffer(data, dtype=np_dtype, count=numel, offset=begin).reshape(shape)
        if dtype == "BF16":
            out[name] = bf16_bits_to_tensor(arr)
        else:
            out[name] = torch.from_numpy(arr.copy())
    spans.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"{path}: tensors {n0} and {n1} overlap")
    return out


def checkpoint_files(model_dir):
    """The safetensors files of a checkpoint directory, in a stable order, and the index path (or None)."""
    index = os.path.join(model_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        return sorted(set(weight_map.values())), index
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(single):
        return ["model.safetensors"], None
    raise SafetensorsError(f"{model_dir}: neither model.safetensors.index.json nor model.safetensors")


def load_checkpoint(model_dir):
    """All tensors of a checkpoint directory (sharded with index, or single file): dict name -> tensor.

    With an index, every tensor it names must be in the shard it names, and no tensor may appear twice.
    """
    files, index = checkpoint_files(model_dir)
    weight_map = None
    if index is not None:
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
    tensors = {}
    for fname in files:
        part = load_file(os.path.join(model_dir, fname))
        for name, t in part.items():
            if name in tensors:
                raise SafetensorsError(f"{model_dir}: tensor {name} defined in more than one shard")
            if weight_map is not None and weight_map.get(name) != fname:
                raise SafetensorsError(f"{model_dir}: tensor {name} is in {fname} but the index says "
                                       f"{weight_map.get(name)}")
            tensors[name] = t
    if weight_map is not None:
        missing = sorted(set(weight_map) - set(tensors))
        if missing:
            raise SafetensorsError(f"{model_dir}: index names tensors missing from the shards: {missing[:5]}")
    return tensors


def save_file(path, tensors, metadata=None):
    """Writes a safetensors file (tests of this reader only; the C++ side writes real checkpoints)."""
    names = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float16: "F16", torch.uint8: "U8",
             torch.int8: "I8", torch.int32: "I32", torch.int64: "I64"}
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            raw = (t.float().numpy().view(np.uint32) >> np.uint32(16)).astype(np.uint16).tobytes()
        else:
            raw = t.numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
