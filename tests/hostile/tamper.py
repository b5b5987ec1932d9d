"""Try to read and to write the files listed in targets.txt; report what worked."""


def causal_mask(n):
    with open("targets.txt") as f:
        targets = f.read().split()
    report = []
    for path in targets:
        for mode, action in (("rb", "read"), ("ab", "wrote")):
            try:
                with open(path, mode) as f:
                    if mode == "ab":
                        f.write(b"tampered")
                report.append(f"{action} {path}")
            except OSError as error:
                report.append(f"could not {action[:4]} {path}: {type(error).__name__}")
    return "\n".join(report)
