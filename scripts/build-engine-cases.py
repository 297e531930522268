#!/usr/bin/env python3
"""Builds tests/engine-cases/: config trees made of ClickHouse's own files.

Every tree has ClickHouse's stock programs/server/config.xml and users.xml as its mains (one
has Debian's 18.16 stock pair, with a <yandex> root) and one or more fragments from
ClickHouse's repository (tests/config/config.d, tests/config/users.d, programs/server/*.d,
tests/integration/test_*/configs), all taken from tests/corpus/real-configs/ (see its
SOURCES.md). A fragment with <profiles>, <users> or <quotas> goes to users.d/, any other to
config.d/ (programs/server/config.d keeps its own place). YAML fragments are left out: no
engine build on PyPI can read them. tests/engine-cases/SOURCES lists each tree's files with
their source path and commit; the mains are kept once, in tests/engine-cases/mains/, and
linked from each tree.

Then: scripts/engine-preprocess.py --all tests/engine-cases   (the engine's expected files)
"""
import os
import re
import shutil
import xml.dom.minidom

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests/corpus/real-configs")
REPO = os.path.join(CORPUS, "clickhouse-repo")
OUT = os.path.join(ROOT, "tests/engine-cases")
USERS_SECTIONS = {"profiles", "users", "quotas"}


def commits():
    """corpus path -> (source path, commit), from the corpus's SOURCES.md table."""
    found = {}
    for line in open(os.path.join(CORPUS, "SOURCES.md")):
        cells = [c.strip().strip("`") for c in line.split("|")]
        if len(cells) > 5 and re.fullmatch(r"[0-9a-f]{40}", cells[4]):
            found[cells[1]] = (cells[3], cells[4])
    return found


SOURCES = commits()


def corpus(path):
    return os.path.join(REPO, path)


def is_users_file(path):
    root = xml.dom.minidom.parse(path).documentElement
    return any(n.nodeType == n.ELEMENT_NODE and n.tagName in USERS_SECTIONS for n in root.childNodes)


def place(path):
    """Where a fragment goes in a tree."""
    if "/programs/server/" in path:
        return os.path.join(os.path.basename(os.path.dirname(path)), os.path.basename(path))
    sub = "users.d" if is_users_file(path) else "config.d"
    return os.path.join(sub, os.path.basename(path))


cases = {}


def case(name, fragments, mains=("programs/server/config.xml", "programs/server/users.xml"), env=None, extra=None,
         written=None):
    files = {"config.xml": mains[0], "users.xml": mains[1]}
    for f in fragments:
        files[place(corpus(f))] = f
    for target, f in (extra or {}).items():
        files[target] = f
    cases[name] = (files, env, written or {})


def stem(path):
    return re.sub(r"[^a-z0-9]+", "-", os.path.splitext(path)[0].lower()).strip("-")


xml_fragments = []
for d in ("tests/config/config.d", "tests/config/users.d", "programs/server/config.d", "programs/server/users.d"):
    xml_fragments += sorted(os.path.join(d, f) for f in os.listdir(corpus(d)) if f.endswith(".xml"))
integration = []
for dirpath, _, names in sorted(os.walk(corpus("tests/integration"))):
    for n in sorted(names):
        if n.endswith(".xml") and "test_config_substitutions" not in dirpath:
            integration.append(os.path.relpath(os.path.join(dirpath, n), REPO))

case("stock", [])
case("debian-18-16-stock", [], mains=("../debian-18.16/etc/clickhouse-server/config.xml",
                                      "../debian-18.16/etc/clickhouse-server/users.xml"))
for f in xml_fragments + integration:
    case(stem(f.replace("tests/config/", "").replace("tests/integration/", "").replace("/configs", "")), [f])
case("docs-profiles-example", [], extra={"users.d/profiles-example.xml":
                                         "docs/en/operations/settings/settings-profiles/profiles-example.xml"})
# several fragments at once, merged in path order
case("all-tests-config-d", [f for f in xml_fragments if f.startswith("tests/config/config.d")])
case("all-tests-users-d", [f for f in xml_fragments if f.startswith("tests/config/users.d")])
case("all-programs-server-d", [f for f in xml_fragments if f.startswith("programs/server/")])
case("all-tests-config", [f for f in xml_fragments if f.startswith("tests/config/")])
case("storage-integration-all", [f for f in integration if "storage" in f or "s3" in f])
# each server fragment with every users.d fragment of ClickHouse's test setup
users_d = [f for f in xml_fragments if f.startswith("tests/config/users.d")]
for f in xml_fragments:
    if f.startswith("tests/config/config.d"):
        case(stem(f.replace("tests/config/", "")) + "-with-users-d", [f] + users_d)
# the legacy <yandex> root of Debian's 18.16 stock config, merged with today's <clickhouse> fragments
debian = ("../debian-18.16/etc/clickhouse-server/config.xml", "../debian-18.16/etc/clickhouse-server/users.xml")
for f in ("tests/config/config.d/clusters.xml", "tests/config/config.d/macros.xml",
          "tests/config/config.d/storage_conf.xml", "tests/config/users.d/readonly.xml",
          "programs/server/config.d/path.xml"):
    case("debian-18-16-" + stem(os.path.basename(f)), [f], mains=debian)
# substitutions: from_env set and unset, include_from named by the environment
subst = "tests/integration/test_config_substitutions/configs/"
case("env-subst-set", [], env={"MAX_QUERY_SIZE": "424242"},
     extra={"users.d/000-users_with_env_subst.xml": subst + "000-users_with_env_subst.xml"})
# values from the environment are parsed as XML content
for label, value in (("entity", "4242&amp;42"), ("element", "<x>1</x>"), ("raw-ampersand", "42&42"),
                     ("raw-less-than", "42<42"), ("cdata-end", "42]]>42")):
    case(f"env-subst-{label}", [], env={"MAX_QUERY_SIZE": value},
         extra={"users.d/000-users_with_env_subst.xml": subst + "000-users_with_env_subst.xml"})
case("env-subst-unset", [], extra={"users.d/000-users_with_env_subst.xml": subst + "000-users_with_env_subst.xml"})
case("include-from-env", [], env={"INCLUDE_FROM_ENV": "include_from_source.xml"},
     extra={"users.d/config_include_from_env.xml": subst + "config_include_from_env.xml",
            "include_from_source.xml": subst + "include_from_source.xml"})
case("include-from-env-unset", [], extra={"users.d/config_include_from_env.xml": subst + "config_include_from_env.xml"})
case("include-from-missing-file", [], extra={"users.d/config_incl.xml": subst + "config_incl.xml"})


# a few fragments written here, each for one behaviour the files above do not show
case("hand-hide-in-preprocessed", [], written={"config.d/hidden.xml": """<clickhouse>
    <custom_secret hide_in_preprocessed="true">s3cr3t</custom_secret>
    <custom_section hide_in_preprocessed="1"><a>1</a></custom_section>
    <custom_shown hide_in_preprocessed="false">shown</custom_shown>
</clickhouse>
"""})
case("hand-unset-env-keeps-own-text", [], written={"config.d/env.xml": """<clickhouse>
    <http_port replace="1" from_env="CHAUDIT_SURELY_UNSET_PORT">8123</http_port>
    <custom_empty from_env="CHAUDIT_SURELY_UNSET"/>
    <custom_optional from_env="CHAUDIT_SURELY_UNSET" optional="true"/>
</clickhouse>
"""})
case("hand-replace-remove-markers", [], written={"config.d/markers.xml": """<clickhouse>
    <logger replace="replace"><level>warning</level><console remove="1"/></logger>
    <custom_appended replace="1"><inner replace="1">2</inner><gone remove="1"/><kept>3</kept></custom_appended>
    <query_log remove="remove"/>
</clickhouse>
"""})
case("hand-missing-incl", [], written={"config.d/incl.xml": """<clickhouse>
    <custom_incl incl="not_there"/>
    <custom_incl_text incl="not_there">kept</custom_incl_text>
    <include incl="not_there_either"/>
</clickhouse>
"""})


def main():
    if os.path.isdir(OUT):
        for d in os.listdir(OUT):
            if os.path.isdir(os.path.join(OUT, d, "tree")):
                shutil.rmtree(os.path.join(OUT, d, "tree"))
    os.makedirs(OUT, exist_ok=True)
    # the mains are shared: each tree links to one copy
    mains = os.path.join(OUT, "mains")
    if os.path.isdir(mains):
        shutil.rmtree(mains)
    os.makedirs(mains)
    lines = ["# Each tree of tests/engine-cases: its files and where they come from",
             "# (case | file in the tree | repository | source path | commit).", ""]
    for name, (files, env, written) in sorted(cases.items()):
        tree = os.path.join(OUT, name, "tree")
        for target, text in written.items():
            os.makedirs(os.path.dirname(os.path.join(tree, target)), exist_ok=True)
            with open(os.path.join(tree, target), "w") as f:
                f.write(text)
            lines.append(f"{name} | {target} | written for this suite (scripts/build-engine-cases.py) | - | -")
        for target, source in sorted(files.items()):
            dest = os.path.join(tree, target)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if target in ("config.xml", "users.xml"):
                shared = os.path.join(mains, stem(source.replace("../", "")) + ".xml")
                if not os.path.exists(shared):
                    shutil.copyfile(os.path.join(REPO, source), shared)
                os.symlink(os.path.relpath(shared, tree), dest)
            else:
                shutil.copyfile(os.path.join(REPO, source), dest)
            key = os.path.relpath(os.path.join(REPO, source), CORPUS)
            if key.startswith("debian-18.16/"):
                origin = "Debian clickhouse-server 18.16.1+ds-7.3+b2 | " + key[len("debian-18.16"):] + " | -"
            else:
                path, commit = SOURCES[key]
                origin = f"ClickHouse/ClickHouse | {path} | {commit}"
            lines.append(f"{name} | {target} | {origin}")
        env_file = os.path.join(OUT, name, "env")
        if env:
            with open(env_file, "w") as f:
                f.writelines(f"{k}={v}\n" for k, v in env.items())
        elif os.path.exists(env_file):
            os.remove(env_file)
    with open(os.path.join(OUT, "SOURCES"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(cases)} trees in {OUT}")


main()
