#!/usr/bin/env bash
# Lay out WordNet 3.0 for NLTK (METEOR) fully offline, from Debian's packages.
#
# Usage: scripts/install_wordnet.sh [TARGET_DIR]
#   TARGET_DIR defaults to the first entry of $NLTK_DATA, else <project>/var/nltk_data (where the Makefile puts it).
#   Result: TARGET_DIR/corpora/wordnet/{index.*,data.*,*.exc,cntlist.rev,index.sense,lexnames}
#
# Why: no PyPI package ships WordNet data and nothing may download at run time;
# Debian's wordnet-base + wordnet-sense-index do ship it, but lack `lexnames`,
# a fixed 45-line table (lexnames(5WN)) that we generate here. Files are copied,
# not symlinked, because NLTK refuses symlinks that leave the corpus folder.
# Idempotent: re-running leaves an up-to-date install untouched.
set -euo pipefail

die() { echo "install_wordnet: ERROR: $*" >&2; exit 1; }

project_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-${NLTK_DATA:-$project_dir/var/nltk_data}}"
target="${target%%:*}"          # NLTK_DATA may be a path list: use the first entry
[ -n "$target" ] || die "empty target directory"

src=/usr/share/wordnet
packages=(wordnet-base wordnet-sense-index)
files=(cntlist.rev index.sense
       index.adj index.adv index.noun index.verb
       data.adj data.adv data.noun data.verb
       adj.exc adv.exc noun.exc verb.exc)

pkg_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

# 1. Debian packages, only if something is missing.
missing=()
for p in "${packages[@]}"; do pkg_installed "$p" || missing+=("$p"); done
for f in "${files[@]}"; do
    [ -s "$src/$f" ] || { missing=("${packages[@]}"); break; }
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || die "Debian packages missing: ${missing[*]}; run as root (e.g. 'sudo make wordnet') or 'apt-get install ${missing[*]}'"
    echo "install_wordnet: installing ${missing[*]} with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq || die "apt-get update failed"
    apt-get install -y -qq --reinstall --no-install-recommends "${missing[@]}" \
        || die "apt-get install ${missing[*]} failed"
fi
for f in "${files[@]}"; do
    [ -s "$src/$f" ] || die "$src/$f still missing after installing ${packages[*]}"
done

# 2. The lexnames table (number, lexicographer file, syntactic category 1=n 2=v 3=adj 4=adv).
write_lexnames() {
    local i=0 name cat
    for name in adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact \
        noun.attribute noun.body noun.cognition noun.communication noun.event noun.feeling \
        noun.food noun.group noun.location noun.motive noun.object noun.person \
        noun.phenomenon noun.plant noun.possession noun.process noun.quantity \
        noun.relation noun.shape noun.state noun.substance noun.time verb.body \
        verb.change verb.cognition verb.communication verb.competition verb.consumption \
        verb.contact verb.creation verb.emotion verb.motion verb.perception \
        verb.possession verb.social verb.stative verb.weather adj.ppl; do
        case "$name" in noun.*) cat=1 ;; verb.*) cat=2 ;; adj.*) cat=3 ;; adv.*) cat=4 ;; esac
        printf '%02d\t%s\t%d\n' "$i" "$name" "$cat"
        i=$((i + 1))
    done
}

# 3. Copy into place (skip if already identical), via a staging dir so a failed
#    or concurrent run never leaves a half-written corpus behind.
dest="$target/corpora/wordnet"
mkdir -p "$target/corpora" || die "cannot create $target/corpora"

up_to_date=1
[ -d "$dest" ] && [ ! -L "$dest" ] || up_to_date=0
for f in "${files[@]}"; do
    [ "$up_to_date" -eq 1 ] || break
    cmp -s "$src/$f" "$dest/$f" || up_to_date=0
done
[ "$up_to_date" -eq 1 ] && ! cmp -s <(write_lexnames) "$dest/lexnames" && up_to_date=0

if [ "$up_to_date" -eq 1 ]; then
    echo "install_wordnet: up to date in $dest"
    exit 0
fi

stage="$(mktemp -d "$target/corpora/.wordnet.XXXXXX")" || die "cannot create staging dir"
trap 'rm -rf "$stage"' EXIT
for f in "${files[@]}"; do
    cp --dereference "$src/$f" "$stage/$f" || die "copy of $src/$f failed"
done
write_lexnames > "$stage/lexnames"
[ "$(wc -l < "$stage/lexnames")" -eq 45 ] || die "generated lexnames does not have 45 lines"
chmod 755 "$stage"
chmod 644 "$stage"/*

rm -rf "$dest"
mv "$stage" "$dest" || die "cannot move $stage to $dest"
trap - EXIT
echo "install_wordnet: WordNet 3.0 installed in $dest (set NLTK_DATA=$target)"
