#!/usr/bin/env bash
# The steps of .github/workflows/byog-verify.yml, as one script that runs anywhere (docs/pr-workflow.md):
# find the bundle the PR links, fetch it, trust the PR author's SSH signing keys (only theirs: a
# maintainer's key signs reproductions, never the bundle), byog verify it for this PR (--for REPO#PR)
# with the project's policy and the PR's claims, re-render its report, write (and on GitHub post) the comment.
# Exit status = byog verify's (0 verified, 1 failed, 2 usage, 3 environment): the check's result.
#
# Inputs (environment):
#   GITHUB_EVENT_PATH   the event payload (pull_request_target or issue_comment)            required
#   GITHUB_REPOSITORY   OWNER/NAME: the bundle must be signed for OWNER/NAME#PR             required
#   GITHUB_SERVER_URL, GITHUB_RUN_ID, GITHUB_STEP_SUMMARY                                    from Actions
#   GH_TOKEN            lets the script list the PR's comments, read its claims file, post   optional
#   BYOG_PR_COMMENTS    a JSON file of the PR's comments instead of asking the API           optional
#   BYOG_POLICY         the project's policy YAML (from the base branch, never the PR)       optional
#   BYOG_CLAIMS         a claims YAML file, or BYOG_CLAIMS_PATH: its path in the PR's head   optional
#   BYOG_MAINTAINERS    GitHub users whose keys sign reproductions (space-separated)         optional
#   BYOG_IMAGE_BASE     where the plots were published; default: named, not embedded        optional
#   BYOG_POST=1         post the comment with gh (edits byog's previous comment)             optional
#   BYOG_REQUIRE_BUNDLE=1  fail when the PR links no bundle (default: nothing to check, exit 0)
#   BYOG_HEAD_SHA       the PR's head commit (default: the payload's pull_request.head.sha) optional
#   BYOG_WORK           working folder (default: a new temp folder); BYOG: the byog command
set -euo pipefail

byog() { ${BYOG:-byog} "$@"; }
: "${GITHUB_EVENT_PATH:?GITHUB_EVENT_PATH must name the event payload}"
work=${BYOG_WORK:-$(mktemp -d)}
mkdir -p "$work"
: "${GITHUB_REPOSITORY:?GITHUB_REPOSITORY must name OWNER/NAME: a bundle is verified for one PR of one repository}"
repo=$GITHUB_REPOSITORY
pr=$(jq -r '(.pull_request // .issue).number' "$GITHUB_EVENT_PATH")
# The PR's head commit: in a pull_request_target payload; an issue_comment one asks the API.
head=${BYOG_HEAD_SHA:-$(jq -r '.pull_request.head.sha // empty' "$GITHUB_EVENT_PATH")}
if [ -z "$head" ] && [ -n "${GH_TOKEN:-}" ]; then head=$(gh api "repos/$repo/pulls/$pr" --jq .head.sha || true); fi

# 1. The PR's comments: from the API on GitHub, from a file elsewhere.
comments=${BYOG_PR_COMMENTS:-}
if [ -z "$comments" ] && [ -n "${GH_TOKEN:-}" ] && [ -n "$repo" ]; then
  gh api "repos/$repo/issues/$pr/comments?per_page=100" > "$work/comments.json"
  comments="$work/comments.json"
fi

# 2. Which bundle: the newest .tar.gz link the PR's author posted (body or comments).
if ! byog pr bundle-url --event "$GITHUB_EVENT_PATH" ${comments:+--comments "$comments"} --json > "$work/pr.json"; then
  echo "PR #$pr links no bundle; nothing to verify."
  [ "${BYOG_REQUIRE_BUNDLE:-0}" = 1 ] && exit 1
  exit 0
fi
url=$(jq -r .bundle "$work/pr.json")
author=$(jq -r .author "$work/pr.json")

# 3. Fetch it over https only (a redirect too: never file:, http: or another scheme), at most
#    GitHub's 25 MB; reproductions beside it.
fetch() {
  curl -fsSL --proto '=https' --proto-redir '=https' --max-redirs 5 --max-filesize 26214400 --max-time 300 \
    -o "$2" "$1"
}
# A multi-part bundle (bundle-url's "parts": the author's links to X.part0.tar.gz ... X.partN.tar.gz,
# names checked by byog): every part is fetched under its own name, and joined in step 4 once the
# author's keys are known (byog bundle join checks the signed part manifest, then each part's sha256).
mkdir -p "$work/parts"
if [ "$(jq -r '.parts | length' "$work/pr.json")" -gt 0 ]; then
  for link in $(jq -r '.parts[]' "$work/pr.json"); do
    name=${link%%[?#]*}
    name=${name##*/}
    if ! fetch "$link" "$work/parts/$name"; then
      echo "A part of the bundle could not be fetched over https (curl refused it or failed): $link" >&2
      exit 1
    fi
  done
elif ! fetch "$url" "$work/bundle.tar.gz"; then
  echo "The bundle link could not be fetched over https (curl refused it or failed): $url" >&2
  exit 1
fi
i=0
for link in $(jq -r '.reproductions[]' "$work/pr.json"); do
  i=$((i + 1))
  fetch "$link" "$work/bundle.reproduction-$i.tar.gz" || echo "reproduction $link could not be fetched; not shown"
done

# 4. Allowed signers, one file per role: the bundle is the PR author's (their SSH signing keys from
#    GitHub, nobody else's); reproductions are the maintainers' (and the author's own, named as theirs).
signers="$work/allowed_signers"
byog keys add "$author" --allowed-signers "$signers"
reproducers="$work/reproduction_signers"
cp "$signers" "$reproducers"
for user in ${BYOG_MAINTAINERS:-}; do byog keys add "$user" --allowed-signers "$reproducers"; done
if [ ! -f "$work/bundle.tar.gz" ]; then
  if ! byog bundle join "$work"/parts/*.part*.tar.gz -o "$work/bundle.tar.gz" --allowed-signers "$signers"; then
    echo "The parts of the bundle do not make the bundle their signed part manifest names." >&2
    exit 1
  fi
fi

# 5. The PR's claims file: a local file, or the PR head's file read as data (never executed).
claims=${BYOG_CLAIMS:-}
if [ -z "$claims" ] && [ -n "${BYOG_CLAIMS_PATH:-}" ] && [ -n "${GH_TOKEN:-}" ] && [ -n "$repo" ]; then
  sha=$(jq -r '.head_sha // empty' "$work/pr.json")
  [ -n "$sha" ] || sha=$head
  [ -n "$sha" ] || sha=$(gh api "repos/$repo/pulls/$pr" --jq .head.sha)
  if gh api -H "Accept: application/vnd.github.raw" "repos/$repo/contents/$BYOG_CLAIMS_PATH?ref=$sha" > "$work/claims.yaml"; then
    claims="$work/claims.yaml"
  fi
fi

# 6. Verify: the check's verdict. --for: the bundle's signed subject must be this PR, so a bundle
#    signed for another PR (or another repository) is not verified here; @head: the candidate must
#    have run the PR's head commit (verify's commit check).
set +e
byog verify "$work/bundle.tar.gz" --for "$repo#$pr${head:+@$head}" --allowed-signers "$signers" ${BYOG_POLICY:+--policy "$BYOG_POLICY"} \
  ${claims:+--claims "$claims"} --json > "$work/verify.json"
status=$?
set -e

# 7. The report, re-rendered from the verified bundle (with its claims and any reproductions).
report=()
note=""
if [ "$status" = 0 ]; then
  if byog report "$work/bundle.tar.gz" -o "$work/report" --image-base "${BYOG_IMAGE_BASE:-none}" \
       --allowed-signers "$reproducers" ${claims:+--claims "$claims"} > "$work/report.log" 2>&1; then
    report=(--report "$work/report/report.md")
  else
    note="byog report failed: $(tail -n 1 "$work/report.log")"
  fi
fi

# 8. The comment (and the job summary on GitHub).
run_url=""
[ -n "${GITHUB_RUN_ID:-}" ] && run_url="${GITHUB_SERVER_URL:-https://github.com}/$repo/actions/runs/$GITHUB_RUN_ID"
byog pr comment --verify "$work/verify.json" "${report[@]}" --bundle "$work/bundle.tar.gz" --bundle-url "$url" \
  ${run_url:+--run-url "$run_url"} ${note:+--note "$note"} -o "$work/comment.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat "$work/comment.md" >> "$GITHUB_STEP_SUMMARY"; fi
if [ "${BYOG_POST:-0}" = 1 ]; then
  gh pr comment "$pr" --repo "$repo" --body-file "$work/comment.md" --edit-last 2>/dev/null \
    || gh pr comment "$pr" --repo "$repo" --body-file "$work/comment.md"
fi
echo "byog verify exited $status; comment: $work/comment.md"
exit "$status"
