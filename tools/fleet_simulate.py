"""fleet_simulate.py: a fleet of N nodes made from one real results file, for measuring and
testing the fleet merge (report/kcs_fleet.py, docs/fleet.md "The merge at scale").

    /usr/bin/python3 tools/fleet_simulate.py REAL.json --nodes N --output DIR
        [--gpus-per-node G] [--listing DEVICES.txt] [--flip NODE:DEVICE[:CASE]]
        [--slow NODE:DEVICE:FACTOR] [--broken NODE]

Writes DIR/results-<i>.json for i in 0..N-1, as tools/fleet.sh's tasks do, and with --listing
DIR/devices-<i>.txt (the `kcs devices` listing each task leaves beside its results). Each node is
the real file with its host renamed (sim-node-0000, ...) and each device given a uuid and PCI bus
id of its own (replacing the ones its "details" give, or added where it has none), so that no two
simulated cards look like the same card; everything else (every result, hash, timing, message) is
the real file's. --gpus-per-node G makes each node hold G devices: device k a copy of the real
file's device k mod D (D real devices), numbered within its backend (a file of reference:0 and
opencl:0 with G = 8 gives reference:0..3 and opencl:0..3), each with a copy of its real device's
results.

Perturbing one card (each repeatable), with DEVICE a device id of the simulated node:
  --flip NODE:DEVICE[:CASE]   the first output hash of each hashed result of that card (of
                              CASE only, when given) replaced by another digest, as one
                              flipped bit of that output would: a silent data corruption
  --slow NODE:DEVICE:FACTOR   every kernel timing of that card (median, quartiles, extremes and
                              repeats) multiplied by FACTOR: a straggler
  --broken NODE               that node's results file cut in half: bad input
A node unperturbed is written by text substitution on one serialised copy, so that a thousand
nodes take seconds; a perturbed node is built from the parsed document.
"""

import argparse
import copy
import hashlib
import json
import os
import re
import sys

UUID = re.compile(r"(^|[;,\s])uuid=[^;,\s]+")
BUS = re.compile(r"(^|[;,\s])pci_bus_id=[^;,\s]+")
HOST_MARK = "@@kcs-sim-host@@"


def card_uuid(node, number):
    """A uuid in NVIDIA's GPU-xxxxxxxx-... form, distinct for each (node, device number)."""
    digits = f"{node:08x}{number:04x}{0x5151:04x}{(node * 131 + number) % (1 << 48):012x}"
    return f"GPU-{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:32]}"


def uuid_mark(number):
    return f"@@kcs-sim-uuid-{number}@@"


def with_identity(details, uuid, bus):
    """details with its uuid and pci_bus_id replaced by these (added where it has none)."""
    text = str(details or "")
    text = UUID.sub(lambda m: f"{m.group(1)}uuid={uuid}", text) if UUID.search(text) else \
        (text + "; " if text else "") + f"uuid={uuid}"
    text = BUS.sub(lambda m: f"{m.group(1)}pci_bus_id={bus}", text) if BUS.search(text) else \
        text + f"; pci_bus_id={bus}"
    return text


def widen(document, gpus_per_node):
    """The document with gpus_per_node devices (copies of its own, numbered within their backend)
    and each result copied onto every copy of its device; (document, {new id: real id})."""
    real = document["devices"]
    if not real:
        raise SystemExit("fleet_simulate: the results file lists no devices")
    if not gpus_per_node:
        return document, {d["id"]: d["id"] for d in real}
    widened = copy.copy(document)
    devices, origin, numbers = [], {}, {}
    for k in range(gpus_per_node):
        source = real[k % len(real)]
        backend = source["backend"]
        index = numbers.get(backend, 0)
        numbers[backend] = index + 1
        device = dict(source, id=f"{backend}:{index}", index=index)
        devices.append(device)
        origin[device["id"]] = source["id"]
    by_device = {}
    for result in document["results"]:
        by_device.setdefault(result.get("device"), []).append(result)
    results = list(by_device.get(None, []))
    for device in devices:
        for result in by_device.get(origin[device["id"]], []):
            # Nothing shared between copies: one card's planted faults stay its own.
            results.append(dict(copy.deepcopy(result), device=device["id"]))
    widened["devices"], widened["results"] = devices, results
    counts = {"passed": 0, "failed": 0, "skipped": 0, "errors": 0}
    if isinstance(document.get("summary"), dict):
        # The runner's counts scale with the copies; recounted the way kcs_results checks them.
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))
        from kcs_results import summary_counts
        counts = summary_counts(results)
        widened["summary"] = dict(document["summary"], **counts)
    return widened, origin


def listing_blocks(path):
    """{device id: [lines]} of a `kcs devices` listing: a device's line and its kernel lines."""
    blocks, order, current = {}, [], None
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = re.match(r"^(\S+:\d+)\s", line)
            if match:
                current = match.group(1)
                order.append(current)
                blocks[current] = []
            elif line[:1].strip():
                current = None  # another top-level line ("cuda  no cuda device: ..."): not a device's
            if current is not None:
                blocks[current].append(line)
    return blocks


def listing_text(blocks, origin):
    lines = []
    for device, source in origin.items():
        for number, line in enumerate(blocks.get(source, [])):
            lines.append(line.replace(source, device, 1) if number == 0 else line)
    return "".join(lines)


def node_pair(text):
    node, _, rest = text.partition(":")
    if not node.isdigit() or not rest:
        raise argparse.ArgumentTypeError(f"{text!r}: give NODE:DEVICE..., e.g. 3:cuda:1")
    return int(node), rest


def perturbed(template, node, flips, slows):
    """The node's document from the parsed template, with its cards' planted faults."""
    document = copy.deepcopy(template)
    for device_case in flips:
        device, case = device_case
        hit = 0
        for result in document["results"]:
            if result.get("device") != device or (case and result["case"] != case):
                continue
            hashes = result.get("output_hashes")
            if isinstance(hashes, dict) and hashes:
                # The digest another output gives: a hash of the flipped output is unrelated to
                # the right one, so any other digest stands for it.
                name = sorted(hashes)[0]
                hashes[name] = hashlib.sha256(f"flipped {hashes[name]}".encode()).hexdigest()
                hit += 1
        if not hit:
            raise SystemExit(f"fleet_simulate: --flip {node}:{device}{':' + case if case else ''}: "
                             "no hashed result of that device (and case)")
    for device, factor in slows:
        hit = 0
        for result in document["results"]:
            kernel = (result.get("timing") or {}).get("kernel") if result.get("device") == device else None
            if not isinstance(kernel, dict):
                continue
            for key, value in kernel.items():
                if key.endswith("_s") and isinstance(value, (int, float)):
                    kernel[key] = value * factor
                elif key == "samples_s" and isinstance(value, list):
                    kernel[key] = [v * factor for v in value]
            hit += 1
        if not hit:
            raise SystemExit(f"fleet_simulate: --slow {node}:{device}: no timed result of that device")
    return document


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fleet_simulate.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("real", help="a results file written by kcs run")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--output", required=True, help="folder for results-<i>.json (created)")
    parser.add_argument("--gpus-per-node", type=int, default=0, metavar="G")
    parser.add_argument("--listing", help="the `kcs devices` listing of the run that wrote REAL")
    parser.add_argument("--flip", action="append", default=[], type=node_pair, metavar="NODE:DEVICE[:CASE]")
    parser.add_argument("--slow", action="append", default=[], type=node_pair, metavar="NODE:DEVICE:FACTOR")
    parser.add_argument("--broken", action="append", default=[], type=int, metavar="NODE")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.gpus_per_node < 0:
        parser.error("--nodes needs a count >= 1, --gpus-per-node one >= 0")
    with open(args.real, encoding="utf-8") as handle:
        document = json.load(handle)
    document, origin = widen(document, args.gpus_per_node)
    blocks = listing_blocks(args.listing) if args.listing else None

    flips, slows = {}, {}
    for node, rest in args.flip:
        device, _, case = rest.partition(":")  # DEVICE is backend:index: rejoin its index
        index, _, case = case.partition(":")
        flips.setdefault(node, []).append((f"{device}:{index}", case or None))
    for node, rest in args.slow:
        device, _, factor = rest.rpartition(":")
        try:
            slows.setdefault(node, []).append((device, float(factor)))
        except ValueError:
            parser.error(f"--slow {node}:{rest}: FACTOR is not a number")
    for device in [d for pairs in list(flips.values()) + list(slows.values()) for d, _ in pairs]:
        if device not in origin:
            parser.error(f"no device {device} in a simulated node (it has {', '.join(origin)})")

    # One serialised template: the host and each card's uuid and bus id as marks replaced per node.
    template = copy.copy(document)
    template["machine"] = dict(document.get("machine") or {}, hostname=HOST_MARK)
    template["devices"] = [dict(d, details=with_identity(d.get("details"), uuid_mark(k), f"@@kcs-sim-bus-{k}@@"))
                           for k, d in enumerate(document["devices"])]
    text = json.dumps(template, indent=1)
    os.makedirs(args.output, exist_ok=True)
    for node in range(args.nodes):
        if node in flips or node in slows:
            body = json.dumps(perturbed(template, node, flips.get(node, []), slows.get(node, [])), indent=1)
        else:
            body = text
        body = body.replace(HOST_MARK, f"sim-node-{node:04d}")
        for k in range(len(document["devices"])):
            body = body.replace(uuid_mark(k), card_uuid(node, k))
            body = body.replace(f"@@kcs-sim-bus-{k}@@", f"{node // 256:04x}:{node % 256:02x}:{k:02x}.0")
        if node in args.broken:
            body = body[:len(body) // 2]
        with open(os.path.join(args.output, f"results-{node}.json"), "w", encoding="utf-8") as handle:
            handle.write(body)
        if blocks is not None:
            with open(os.path.join(args.output, f"devices-{node}.txt"), "w", encoding="utf-8") as handle:
                handle.write(listing_text(blocks, origin))
    print(f"fleet_simulate: {args.nodes} nodes of {len(document['devices'])} devices and "
          f"{len(document['results'])} results each in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
