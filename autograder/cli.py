"""The ``autograder`` command: grade, check, generate, release, export, doctor, and the
class workflows (collect, grade-batch, merge, report, publish, formative)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from autograder import report
from autograder.course.assignment import Assignment, slugs
from autograder.errors import GraderFault, SuiteError, UsageError
from autograder.platforms import classroom50, gradescope
from autograder.platforms.record import grade_for_record
from autograder.result import write_json
from autograder.sandbox import runtime
from autograder.sandbox.layers import MODES, STRONG_MEANS, WEAK_MEANS, Sandbox
from autograder.sandbox.worker import BUDGET_TIMEOUTS
from autograder.workflows import (
    batch,
    classreport,
    clusters,
    collect,
    formative,
    gradebook,
    insight,
    merge,
    publish,
    regrade,
    similarity,
    term,
)
from autograder.workflows import check as checking
from autograder.workflows.release import release


def cmd_grade(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    submission = Path(args.submission) if args.submission else assignment.starter
    if not submission.is_dir():
        raise UsageError(f"no such submission folder: {submission}")
    if batch.holds_a_class(submission, assignment):
        raise UsageError(
            f"{submission} holds one folder per student: grade a class with "
            f"`autograder grade-batch {assignment.slug} {submission} --out DIR`"
        )
    try:
        result = grade_for_record(assignment, submission, Sandbox.detect(args.sandbox))
    except (SuiteError, GraderFault) as error:
        if args.json:  # a platform waiting for results.json still gets one
            write_json(Path(args.json), gradescope.gradescope_failure(str(error)))
        raise
    print(report.student_text(result))
    print(report.instructor_text(result), file=sys.stderr)
    if args.json:
        write_json(Path(args.json), gradescope.gradescope(result))
        print(f"results written to {args.json}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    names = [args.assignment] if args.assignment else slugs()
    assignments = [Assignment.load(name, args.course) for name in names]
    outcomes = checking.check_all(assignments, Sandbox.detect(args.sandbox), quiet=args.quiet)
    return 0 if all(o.ok for o in outcomes) else 1


def cmd_generate(args: argparse.Namespace) -> int:
    for name in [args.assignment] if args.assignment else slugs():
        assignment = Assignment.load(name, args.course)
        for filename, content in assignment.generated().items():
            path = assignment.starter / filename
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            print(f"wrote {path}")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    written = release(Assignment.load(args.assignment, args.course), Path(args.out_dir))
    print(f"wrote {len(written)} files to {args.out_dir}: push it as the students' template")
    return 0


EXPORTS = {"gradescope": gradescope.export, "classroom50": classroom50.export}
LMS = tuple(gradebook.EXPORTERS)


def cmd_export(args: argparse.Namespace) -> int:
    if args.platform in LMS:
        results = [Path(p) for p in args.assignment]
        roster = Path(args.roster) if args.roster else None
        warn = lambda line: print(f"autograder: {line}", file=sys.stderr)  # noqa: E731
        out = gradebook.export(args.platform, results, Path(args.out), roster, warn)
        print(f"wrote the {args.platform} grade import for {len(results)} assignment(s) to {out}")
        return 0
    if len(args.assignment) != 1:
        raise UsageError(f"export {args.platform} takes one ASSIGNMENT and OUT")
    if args.roster:
        raise UsageError("--roster is for the canvas and moodle exports")
    slug = args.assignment[0]
    out = EXPORTS[args.platform](Assignment.load(slug, args.course), Path(args.out))
    print(f"wrote the {args.platform} bundle for {slug} to {out}")
    return 0


def cmd_nbgrader(args: argparse.Namespace) -> int:
    from autograder.platforms.nbgrader import notebook

    if args.action == "build":
        names = args.assignments or slugs()
        assignments = [Assignment.load(n, args.course_root) for n in names]
        for path in notebook.build(Path(args.course), assignments):
            print(f"wrote {path}")
        return 0
    from autograder.platforms.nbgrader import gradebook  # needs nbgrader itself

    course = Path(args.course)
    gradebook.autograde(
        course, args.assignment, args.student, args.allow_weak_sandbox, root=args.course_root
    )
    return 0


LAYERS = {
    "process": "a separate worker process, killed whole on a timeout",
    "rlimits": "memory, CPU, file size, open files and core limits",
    "session": "its own session and process group",
    "scrubbed-env": "no tokens, keys or secrets; one BLAS thread",
    "uid": "a dedicated unprivileged uid (only as root)",
    "cgroup": "a cgroup per worker: every process it starts is counted, limited and killed",
    "tmpfs": "a size-limited tmpfs per job folder: a worker fills only its own disk",
    "landlock": "Landlock: reads only Python, NumPy and the submission; writes only scratch",
    "namespaces": "bubblewrap: no network, private PIDs, only the submission visible",
}


def cmd_doctor(args: argparse.Namespace) -> int:
    box = Sandbox.detect(args.sandbox)
    print("Sandbox layers on this machine:")
    for layer, what in LAYERS.items():
        print(f"  [{'ok' if layer in box.layers else '--'}] {layer:<13} {what}")
    for note in box.notes:
        print(f"  missing: {note}")
    limits = box.limits
    print(
        f"limits: {limits.memory >> 20} MiB memory, {limits.cpu_seconds} s CPU, "
        f"{limits.file_size >> 20} MiB files, {limits.open_files} open files, "
        f"{limits.processes} processes"
    )
    print(f"runtime: {box.runtime.summary}")
    print(f"landlock: {box.landlock_summary()}")
    print(f"cgroup: {box.cgroups.summary if box.cgroups else 'none'}")
    print(
        f"job folder: {limits.scratch >> 20} MiB, {limits.scratch_files} files, "
        + ("a tmpfs" if box.tmpfs else "measured after each call")
    )
    if box.weak:
        print(f"WEAK SANDBOX: {box.strength}")
        print("Grading for record refuses it unless you pass --allow-weak-sandbox.")
    else:
        print(box.strength)
    print(f"A sandbox is {STRONG_MEANS}; it is {WEAK_MEANS}.")
    return 0


def cmd_sandbox(args: argparse.Namespace) -> int:
    """``sandbox runtime``: copy Python and NumPy where the sandbox uid can read them."""
    if args.to is None and os.geteuid() != 0:
        raise UsageError(
            f"{runtime.RUNTIME_DIR} is for a grader running as root (the dedicated uid needs "
            "root); pass --to DIR to make a runtime elsewhere"
        )
    made = runtime.install(Path(args.to) if args.to else runtime.RUNTIME_DIR)
    print(
        f"copied {made.files} files ({made.bytes >> 20} MiB) into {made.folder} "
        f"in {made.seconds:.1f} s; checked: {runtime.copied_runtime(made.folder).summary}"
    )
    if args.to and Path(args.to).resolve() != runtime.default_folder().resolve():
        print(f"the sandbox uses it when {runtime.RUNTIME_VARIABLE}={made.folder} is set")
    return 0


def cmd_collect(args: argparse.Namespace) -> int:
    root = Assignment.load(args.assignment).root  # an unknown slug fails before any git runs
    pinned = collect.pinned_shas(collect.read_manifest(Path(args.at))) if args.at else None
    logins = collect.read_roster(Path(args.roster))
    course = None
    course_file = term.course_file(args.course_file, root, slugs())
    if course_file:  # checked whole before any git runs
        course = term.load(course_file, slugs(), logins)
        course.deadline(args.assignment)
    collect.collect(
        args.assignment,
        logins,
        Path(args.into),
        template=args.url_template,
        org=args.org,
        pinned=pinned,
        max_bytes=args.max_file_bytes,
        jobs=args.jobs,
        course=course,
    )
    return 0


def cmd_grade_batch(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    batch.grade_batch(
        assignment,
        Path(args.submissions),
        Path(args.out),
        jobs=args.jobs,
        shard=batch.parse_shard(args.shard),
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        course_file=term.course_file(args.course_file, assignment.root, slugs()),
    )
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    states = merge.read_shards([Path(d) for d in args.shards], args.allow_mixed)
    course = gradebook.course_of(
        states[0] | {"students": [s for st in states for s in st["students"]]}
    )
    merge.merge(
        [Path(d) for d in args.shards], Path(args.out), allow_mixed=args.allow_mixed, course=course
    )
    return cmd_report(argparse.Namespace(folder=args.out, summary_to=None))


def cmd_regrade(args: argparse.Namespace) -> int:
    use_course(args.course)
    regrade.regrade(
        Path(args.results),
        Path(args.out),
        submissions=Path(args.submissions) if args.submissions else None,
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        jobs=args.jobs,
    )
    print(f"regraded into {args.out}; compare with `autograder diff {args.results} {args.out}`")
    return 0


def cmd_passback(args: argparse.Namespace) -> int:
    warn = lambda line: print(f"autograder: {line}", file=sys.stderr)  # noqa: E731
    roster = Path(args.roster) if args.roster else None
    sent = gradebook.passback(
        Path(args.results), args.url, args.course_id, args.assignment_id, roster, warn
    )
    print(f"sent {sent} grade(s) to Canvas assignment {args.assignment_id}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    found = regrade.compare(Path(args.old), Path(args.new), args.allow_mixed)
    print(regrade.markdown(found), end="")
    md, table = regrade.write_diff(found, Path(args.out or args.new))
    print(f"written to {md} and {table}", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    stats = classreport.write(Path(args.folder), getattr(args, "min_cluster", clusters.MIN_SIZE))
    print(f"class report for {len(stats.students)} students: {Path(args.folder) / 'report.html'}")
    if args.summary_to:
        with open(args.summary_to, "a") as summary:
            summary.write(classreport.job_summary(stats))
    return 0


def cmd_propose(args: argparse.Namespace) -> int:
    use_course(args.course)
    target = Path(args.out) if args.out else None
    path, count = insight.propose(args.assignment, Path(args.results), target, args.min_cluster)
    print(f"{count} draft catalogue entries, to review before use: {path}")
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    use_course(args.course)
    found = insight.write_similarity(Path(args.results), args.top)
    print(similarity.CAVEAT)
    for rank, pair in enumerate(found.top(args.top), 1):
        print(f"{rank:3d}. {pair.score:.2f}  {pair.first}  {pair.second}")
    print(
        f"{len(found.pairs)} pairs ranked in {found.seconds:.1f} s: {Path(args.results)}/"
        f"{insight.SIMILARITY_MD}, side by side in {insight.SIMILARITY_HTML}"
    )
    return 0


def add_min_cluster_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--min-cluster",
        type=positive,
        default=clusters.MIN_SIZE,
        metavar="N",
        help="the least number of students in a cluster of unexplained mistakes "
        "(default: %(default)s)",
    )


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def cmd_publish(args: argparse.Namespace) -> int:
    dry_run = Path(args.dry_run) if args.dry_run else None
    publish.publish(Path(args.folder), args.org, args.url_template, dry_run)
    return 0


def cmd_formative(args: argparse.Namespace) -> int:
    assignment = Assignment.load(args.assignment, args.course)
    now = formative.parse_time(args.now) if args.now else None
    formative.formative_round(
        assignment,
        collect.read_roster(Path(args.roster)),
        Path(args.work),
        formative.Where(args.org, args.url_template, args.repository_template),
        dry_run=Path(args.dry_run) if args.dry_run else None,
        clock=(lambda: now) if now else formative.utc_now,
        scheduled=args.scheduled,
        sandbox_mode=args.sandbox,
        allow_weak_sandbox=args.allow_weak_sandbox,
        jobs=args.jobs,
        course_file=Path(args.course_file) if args.course_file else None,
    )
    return 0


def use_course(course: str | None) -> None:
    """For commands that load an assignment deep inside a workflow: --course as
    $AUTOGRADER_ROOT, the one other way find_root() is told the course folder."""
    if course:
        os.environ["AUTOGRADER_ROOT"] = course


def add_course_option(p: argparse.ArgumentParser, dest: str = "course") -> None:
    """Every command that reads an assignment's reference or starter takes --course."""
    p.add_argument(
        "--course",
        dest=dest,
        metavar="COURSE_DIR",
        help="the course folder holding reference/ and assignments/ (default: the copy "
        "installed with the grader, or its source checkout; never the current folder)",
    )


def add_roster_options(p: argparse.ArgumentParser) -> None:
    """The assignment, the roster and where the students' repositories are (collect's)."""
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("--roster", required=True, help="CSV with a login (or github_username) column")
    p.add_argument("--org", default="", help="the GitHub organisation, for the URL template")
    p.add_argument(
        "--url-template",
        default=collect.DEFAULT_TEMPLATE,
        help="repository URL with {org}, {assignment} and {login} (default: %(default)s)",
    )


def add_allow_weak_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        help=f"grade for record even when the sandbox is {WEAK_MEANS}",
    )


def add_course_file_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--course-file",
        metavar="COURSE_YAML",
        help="the course file (default: course.yaml at the course root): due dates with a "
        "time zone, the late policy and grace days (extensions.csv beside it gives per-student "
        "due dates), and the formative round's settings; with due dates, collect honours each "
        "student's own deadline, and scores.csv applies the policy",
    )


def add_allow_mixed_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-mixed",
        action="store_true",
        help="accept results graded by different grader versions or suites",
    )


def add_actions(sub: Any, name: str, help: str, description: str) -> Any:
    """A command whose work is chosen by an ACTION word (``nbgrader build``)."""
    p = sub.add_parser(name, help=help, description=description)
    return p.add_subparsers(dest="action", required=True, metavar="ACTION")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="autograder",
        description="Grade attention coursework: student code runs in a sandboxed worker.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "grade",
        help="grade one submission and print points and feedback",
        description="Grade SUBMISSION_DIR (default: the starter in "
        "assignments/ASSIGNMENT). Exits 0 whenever grading completed. "
        "Student code runs in a sandboxed worker; each call into it stops after the "
        "assignment's timeout (`timeout` in its suite.yaml, e.g. 5 s), and one submission may "
        "spend at "
        f"most {BUDGET_TIMEOUTS} timeouts of waiting in all ({BUDGET_TIMEOUTS * 5} s at 5 s), "
        "so even a submission whose every function hangs is graded within about "
        f"{BUDGET_TIMEOUTS * 5 + 5} s.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument(
        "submission", metavar="SUBMISSION_DIR", nargs="?", help="folder with the student's files"
    )
    p.add_argument("--json", metavar="PATH", help="also write Gradescope's results.json here")
    p.add_argument(
        "--sandbox",
        choices=MODES,
        default="auto",
        help="isolation: auto (strongest available), landlock (bubblewrap hidden), "
        "fallback (no bubblewrap, no Landlock), or plain (none)",
    )
    add_course_option(p)
    p.set_defaults(run=cmd_grade)

    p = sub.add_parser(
        "check",
        help="validate assignments: reference, stubs, sheet, tests",
        description="Verify each assignment (or the one named) and exit "
        "non-zero with a report when anything is off. Ends with a summary table: "
        "assignment, result, what failed, seconds.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print only the failures and the summary table",
    )
    add_course_option(p)
    p.set_defaults(run=cmd_check)

    p = sub.add_parser(
        "generate",
        help="write the student stubs and blank answer sheets",
        description="Derive assignments/<slug>/ stubs from reference/<slug>/ "
        "and the blank answers.yaml from the quiz key.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", nargs="?", help="one assignment slug")
    add_course_option(p)
    p.set_defaults(run=cmd_generate)

    p = sub.add_parser(
        "release",
        help="write the template repository students receive (public files only)",
        description="Write a ready-to-push template into OUT_DIR (new or empty): the handout, "
        "the blank answers.yaml, the stubs, the public tests, requirements.txt, .gitignore, and "
        ".github/workflows/classroom.yml running the practice checks (`python "
        "practice/check.py`). Never the reference, hidden tests, mistake catalogue or quiz key.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("out_dir", metavar="OUT_DIR", help="where to write the template")
    add_course_option(p)
    p.set_defaults(run=cmd_release)

    p = sub.add_parser(
        "export",
        help="write a grading bundle (Gradescope, Classroom 50) or grades for an LMS (Canvas, "
        "Moodle)",
        description=textwrap.fill(
            "gradescope: OUT is the autograder zip to upload (setup.sh and "
            "run_autograder at its root). classroom50: OUT is the folder "
            "CLASSROOM/autograders/ASSIGNMENT of the classroom50 repository (autograder.py and the "
            "grader beside it). Both carry the hidden suite and the reference: give them only to "
            "the platform, never to students. canvas: OUT is Canvas's gradebook import CSV "
            "(Student, ID, SIS User ID, SIS Login ID, Section, then one column per RESULTS "
            "folder, the grade after the late policy). moodle: OUT is Moodle's grade import CSV "
            "(Email address, then one column per RESULTS folder; map it in Moodle's import "
            "form). Students the roster cannot identify are listed on stderr, never dropped "
            "silently.",
            width=88,
        ),
        epilog=gradescope.DRY_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("platform", choices=sorted([*EXPORTS, *LMS]), help="the platform")
    p.add_argument(
        "assignment",
        metavar="ASSIGNMENT|RESULTS",
        nargs="+",
        help="the assignment slug (gradescope, classroom50), or one or more grade-batch "
        "output folders, one column each (canvas, moodle)",
    )
    p.add_argument(
        "out",
        metavar="OUT",
        help="the zip (gradescope), folder (classroom50) or CSV (canvas, moodle)",
    )
    p.add_argument(
        "--roster",
        metavar="ROSTER",
        help="canvas, moodle: the roster CSV mapping each login to its LMS identity (columns "
        "name, canvas_id, sis_user_id, sis_login_id, section, email; default: roster.csv "
        "beside the course file)",
    )
    add_course_option(p)
    p.set_defaults(run=cmd_export)

    nb = add_actions(
        sub,
        "nbgrader",
        "build an nbgrader course; autograde it in the sandbox",
        "Release and grade through nbgrader: `build` writes the course from our sources, "
        "`autograde` grades submissions in the sandbox into nbgrader's gradebook.",
    )
    q = nb.add_parser(
        "build",
        help="write nbgrader_config.py and source/<slug>/ for each assignment",
        description="Write an nbgrader course into COURSE_DIR: nbgrader_config.py and, per "
        "assignment, source/<slug>/<slug>.ipynb and the blank answers.yaml. Then run "
        "`nbgrader generate_assignment SLUG --course-dir COURSE_DIR`.",
    )
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignments", metavar="ASSIGNMENT", nargs="*", help="slugs (default: all)")
    add_course_option(q, dest="course_root")
    q.set_defaults(run=cmd_nbgrader)
    q = nb.add_parser(
        "autograde",
        help="grade submitted notebooks in the sandbox, into nbgrader's gradebook",
        description="Grade COURSE_DIR/submitted/<student>/ASSIGNMENT/ASSIGNMENT.ipynb (and "
        "answers.yaml beside it) with the sandboxed grader; write the scores into the "
        "gradebook and autograded/ so formgrader, generate_feedback and export work unchanged.",
    )
    q.add_argument("course", metavar="COURSE_DIR", help="the nbgrader course folder")
    q.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    q.add_argument("--student", metavar="ID", help="grade only this student")
    add_allow_weak_option(q)
    add_course_option(q, dest="course_root")
    q.set_defaults(run=cmd_nbgrader)

    p = sub.add_parser(
        "doctor",
        help="report which sandbox layers work on this machine",
        description="Detect bubblewrap, Landlock, the dedicated uid and resource limits, and "
        f"say whether the sandbox is {STRONG_MEANS}; or {WEAK_MEANS}.",
    )
    p.add_argument("--sandbox", choices=MODES, default="auto", help="the mode to examine")
    p.set_defaults(run=cmd_doctor)

    actions = add_actions(
        sub,
        "sandbox",
        "prepare this machine's sandbox (a Python the dedicated uid can run)",
        "Prepare what the sandbox needs on this machine; `doctor` says what is missing.",
    )
    q = actions.add_parser(
        "runtime",
        help=f"copy Python and NumPy into {runtime.RUNTIME_DIR} for the dedicated uid",
        description="Copy the grader's interpreter (and its shared libpython), the standard "
        "library without tests, IDLE and Tk, and NumPy into a root-owned, world-readable "
        f"folder (default {runtime.RUNTIME_DIR}), replacing an older copy. The worker runs "
        "this copy whenever its Python and NumPy versions are the grader's, so the dedicated "
        "uid works even where Python lives under a home folder others cannot enter. Run it "
        "again after upgrading Python or NumPy.",
    )
    q.add_argument(
        "--to",
        metavar="DIR",
        help=f"where to make it (the sandbox looks there when {runtime.RUNTIME_VARIABLE}=DIR)",
    )
    q.set_defaults(run=cmd_sandbox)

    p = sub.add_parser(
        "collect",
        help="fetch every student's repository with git and record each commit SHA",
        description="Clone or fetch each roster student's repository (URL from a template) "
        "into DIR/<login>/ and write DIR/manifest.json with each commit SHA and the time it "
        "was collected. The SHA at collection time is the deadline (commit dates can be "
        "forged). A token for private repositories is read from AUTOGRADER_GIT_TOKEN or "
        "GITHUB_TOKEN and never written anywhere. Only regular files are collected: no "
        "symlinks, no submodules, nothing over --max-file-bytes.",
    )
    add_roster_options(p)
    p.add_argument("--into", required=True, metavar="DIR", help="where submissions go")
    p.add_argument(
        "--at",
        metavar="MANIFEST",
        help="re-collect exactly the SHAs recorded in this manifest (for re-grading)",
    )
    p.add_argument(
        "--max-file-bytes",
        type=int,
        default=collect.MAX_FILE_BYTES,
        help="skip (and note) files larger than this (default: %(default)s)",
    )
    p.add_argument("--jobs", type=int, default=4, help="repositories fetched at once")
    add_course_file_option(p)
    p.set_defaults(run=cmd_collect)

    p = sub.add_parser(
        "grade-batch",
        help="grade a whole class in parallel into results.json files and scores.csv",
        description="Grade every submission in SUBMISSIONS_DIR: the folders collect writes "
        "(with manifest.json), nbgrader's submitted/<student>/<assignment>/, or any folder of "
        "folders named by student id. Writes DIR/<student>/results.json and DIR/scores.csv. "
        "Re-running skips submissions whose content and grader are unchanged, so an "
        "interrupted batch resumes where it stopped.",
    )
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment slug")
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR", help="one folder per student")
    p.add_argument("--out", required=True, metavar="DIR", help="where results go")
    p.add_argument("--jobs", type=int, help="parallel graders (default: the number of cores)")
    p.add_argument("--shard", metavar="K/N", help="grade only shard K of N (a stable split)")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    add_allow_weak_option(p)
    add_course_option(p)
    add_course_file_option(p)
    p.set_defaults(run=cmd_grade_batch)

    p = sub.add_parser(
        "merge",
        help="combine the outputs of grade-batch shards into one scores.csv",
        description="Merge the output folders of `grade-batch --shard K/N` runs into OUT: "
        "every student's results.json and one scores.csv, equal to grading the class at once. "
        "Refuses shards that overlap, miss a part, or come from different grader versions.",
    )
    p.add_argument("shards", metavar="DIR", nargs="+", help="the shards' output folders")
    p.add_argument("--out", required=True, metavar="OUT", help="a new folder for the merge")
    add_allow_mixed_option(p)
    p.set_defaults(run=cmd_merge)

    p = sub.add_parser(
        "regrade",
        help="grade exactly the submissions of a results folder again, into a new folder",
        description="Regrade RESULTS (a grade-batch or merge folder) with the current suite and "
        "grader into the new folder NEW: the same SHAs, checked byte for byte against what "
        "RESULTS graded (else nothing runs), with the course file RESULTS used. Nothing is "
        "published: compare with `autograder diff RESULTS NEW`, then `publish` NEW.",
    )
    p.add_argument("results", metavar="RESULTS", help="the folder graded before")
    p.add_argument("--out", required=True, metavar="NEW", help="a new folder for the regrade")
    p.add_argument(
        "--submissions",
        metavar="DIR",
        help="the collected submissions (default: the folder RESULTS was graded from)",
    )
    p.add_argument("--jobs", type=int, help="parallel graders (default: the number of cores)")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    add_allow_weak_option(p)
    add_course_option(p)
    p.set_defaults(run=cmd_regrade)

    p = sub.add_parser(
        "diff",
        help="who gains or loses between two results folders, and why",
        description="Compare OLD and NEW (grade-batch, merge or regrade folders of one "
        "assignment): who gains or loses points (old and new totals, after the late policy), "
        "which tests changed with the diagnosed cause on each side, and the grader versions "
        "and suite digests. Prints the Markdown and writes diff.md and diff.csv into NEW (or "
        "--out). Refuses a side that mixes grader versions unless --allow-mixed.",
    )
    p.add_argument("old", metavar="OLD", help="the results folder before")
    p.add_argument("new", metavar="NEW", help="the results folder after")
    p.add_argument("--out", metavar="DIR", help="where diff.md and diff.csv go (default: NEW)")
    add_allow_mixed_option(p)
    p.set_defaults(run=cmd_diff)

    p = sub.add_parser(
        "passback",
        help="send a results folder's grades straight to a Canvas assignment (canvasapi)",
        description="Post every graded student's total (after the late policy; 0 for nothing "
        "submitted) to one Canvas assignment in a single bulk update, through canvasapi "
        "(pip install canvasapi). Students are matched by the roster's canvas_id; those "
        "without one are listed on stderr. The token is read from CANVAS_API_TOKEN, never "
        "from an argument.",
    )
    p.add_argument("results", metavar="RESULTS", help="a grade-batch, merge or regrade folder")
    p.add_argument(
        "--url", required=True, help="the Canvas address, e.g. https://canvas.example.edu"
    )
    p.add_argument("--course-id", required=True, type=int, help="the Canvas course id")
    p.add_argument("--assignment-id", required=True, type=int, help="the Canvas assignment id")
    p.add_argument(
        "--roster",
        metavar="ROSTER",
        help="the roster CSV with a canvas_id column (default: roster.csv beside the course file)",
    )
    p.set_defaults(run=cmd_passback)

    p = sub.add_parser(
        "report",
        help="write the class report (Markdown and HTML with charts) for a batch folder",
        description="Read a grade-batch or merge output folder DIR and write DIR/report.md "
        "(images in DIR/report-images/) and DIR/report.html (one file, works offline): score "
        "histograms, pass rate per test worst first, the most frequent diagnosed mistakes with "
        "who made them, and the submissions that timed out, crashed or misbehaved. For the "
        "instructor only: it names students.",
    )
    p.add_argument("folder", metavar="DIR", help="a grade-batch or merge output folder")
    p.add_argument(
        "--summary-to",
        metavar="FILE",
        help="also append a short Markdown summary (distribution, frequent mistakes, no names) "
        "to FILE, e.g. $GITHUB_STEP_SUMMARY",
    )
    add_min_cluster_option(p)
    p.set_defaults(run=cmd_report)

    p = sub.add_parser(
        "propose",
        help="draft catalogue entries from the clusters of unexplained mistakes of a class",
        description="Read a grade-batch or merge output folder RESULTS of ASSIGNMENT, find the "
        "clusters of students who fail the same tests of a function with the same wrong values "
        "that no catalogued mistake or generic error shape explains, and write one draft "
        "catalogue entry per cluster (the representative student's function, with a name, "
        "replaces, and a title, why and hint to fill in) to a file for review, never into the "
        "suite. Once reviewed and added to the suite, `check` validates it.",
    )
    p.add_argument("assignment", help="the assignment the class was graded for")
    p.add_argument("results", metavar="RESULTS", help="a grade-batch or merge output folder")
    p.add_argument(
        "--out",
        metavar="FILE",
        help=f"where the drafts go (default: RESULTS/{clusters.PROPOSALS}; never a suite)",
    )
    add_min_cluster_option(p)
    add_course_option(p)
    p.set_defaults(run=cmd_propose)

    p = sub.add_parser(
        "similarity",
        help="rank every pair of submissions of a class by code similarity (instructor only)",
        description="Compare every pair of submissions of a grade-batch or merge output folder "
        "RESULTS with copydetect (winnowing over normalised tokens), the starter code "
        "subtracted, and write RESULTS/similarity.md (every pair that shares code, ranked, with "
        "scores) and RESULTS/similarity.html (the top pairs side by side, matching regions "
        "marked). A high score is a signal for a person to look at, not a verdict. It names "
        "students: never publish it.",
    )
    p.add_argument("results", metavar="RESULTS", help="a grade-batch or merge output folder")
    p.add_argument(
        "--top",
        type=positive,
        default=similarity.TOP,
        metavar="N",
        help="pairs printed and shown side by side (default: %(default)s)",
    )
    add_course_option(p)
    p.set_defaults(run=cmd_similarity)

    p = sub.add_parser(
        "publish",
        help="post each student's feedback on their graded commit (GitHub commit comments)",
        description="For every graded student of a grade-batch or merge folder DIR with a "
        "collected SHA, post the feedback (points per test, outcome, diagnosed mistakes and "
        "hints; never expected values or hidden tests) as a commit comment through GitHub's "
        "REST API, with the token in AUTOGRADER_GIT_TOKEN or GITHUB_TOKEN. Off unless run; "
        "--dry-run writes the requests to a file instead.",
    )
    p.add_argument("folder", metavar="DIR", help="a grade-batch or merge output folder")
    p.add_argument("--org", default="", help="the owner of the students' repositories")
    p.add_argument(
        "--url-template",
        default=collect.DEFAULT_TEMPLATE,
        help="the repository URL template collect used (default: %(default)s)",
    )
    p.add_argument("--dry-run", metavar="FILE", help="write the requests here (JSON lines)")
    p.set_defaults(run=cmd_publish)

    p = sub.add_parser(
        "formative",
        help="a formative round: grade each student's latest push, post feedback (rate-limited)",
        description="Collect the latest commit of every roster student's repository into "
        "WORK/submissions, grade what changed (as grade-batch) into WORK/results, and post to "
        "each student's commit the score per test and the named mistakes (never expected "
        "values or hidden tests) as a commit comment, at most formative.results_per_day times "
        "per student per day (the course file); each comment says when the next one comes. Keep "
        "WORK between rounds: WORK/ledger.json is what was posted. A formative result never "
        "counts as the grade: publish and merge refuse WORK/results. The token is read from "
        "AUTOGRADER_GIT_TOKEN or GITHUB_TOKEN.",
    )
    add_roster_options(p)
    p.add_argument("--work", required=True, metavar="WORK", help="the round's folder, kept")
    p.add_argument(
        "--repository-template",
        default="",
        metavar="OWNER/NAME",
        help="where to post, e.g. {org}/{assignment}-{login} (default: the URL template)",
    )
    p.add_argument(
        "--dry-run",
        metavar="FILE",
        help="write the requests here (JSON lines), send nothing, and keep a separate "
        "ledger (WORK/ledger.dry-run.json) so no student's quota is spent",
    )
    p.add_argument(
        "--scheduled",
        action="store_true",
        help="do nothing outside the term dates in the course file (for scheduled runs)",
    )
    p.add_argument(
        "--now", metavar="TIME", help="take this ISO time as now (to rehearse a day of rounds)"
    )
    p.add_argument("--jobs", type=int, help="parallel graders (default: the number of cores)")
    p.add_argument("--sandbox", choices=MODES, default="auto", help="isolation for the workers")
    add_allow_weak_option(p)
    add_course_option(p)
    add_course_file_option(p)
    p.set_defaults(run=cmd_formative)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as error:
        print(f"autograder: error: {error}", file=sys.stderr)
        return 2
    except SuiteError as error:
        print(f"autograder: the hidden suite is broken: {error}", file=sys.stderr)
        return 3
    except GraderFault as error:
        print(f"autograder: the grader failed on this machine: {error}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
