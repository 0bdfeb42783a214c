#!/usr/bin/env bash
# ON the lent GPU machine: copy the staging parts carried in this call (.stage/cNN/*) to where the
# setup scripts read them, and, once a set is whole, check it against its sha256 and unpack it.
#   pp.NN -> /tmp/stage/pMM/part.NN (the vLLM payload, read by device-setup)
#   ww.NN -> joined into /tmp/wh (the wheelhouse tar)
#   rr.NN -> /tmp/stage-ray/rMM/rpart.NN (the Ray tar, read by multinode.sh setup)
# Parts are made here by splitting each set into 30 MiB pieces (a call carries 64 MiB with the checkout).
set -u
for f in .stage/c*/*; do
  [ -f "$f" ] || continue
  n=$(basename "$f")
  case $n in
    pp.*) k=${n#pp.}; d=/tmp/stage/p$(printf %02d $((10#$k + 1))); mkdir -p "$d"; cp "$f" "$d/part.$k" ;;
    rr.*) k=${n#rr.}; d=/tmp/stage-ray/r$(printf %02d $((10#$k + 1))); mkdir -p "$d"; cp "$f" "$d/rpart.$k" ;;
    ww.*) mkdir -p /tmp/stage-wh; cp "$f" /tmp/stage-wh/ ;;
    *.sha256) cp "$f" /tmp/ ;;
  esac
done
if [ -f /tmp/wh.sha256 ] && [ ! -f /tmp/wh/.ok ] && [ "$(ls /tmp/stage-wh 2>/dev/null | wc -l)" -ge "${WH_PARTS:-4}" ]; then
  if [ "$(cat /tmp/stage-wh/ww.* | sha256sum | cut -c1-64)" = "$(cut -c1-64 /tmp/wh.sha256)" ]; then
    mkdir -p /tmp/wh && cat /tmp/stage-wh/ww.* | tar -xf - -C /tmp/wh && touch /tmp/wh/.ok && echo "wheelhouse: $(ls /tmp/wh/*.whl | wc -l) wheels"
  else echo "wheelhouse parts do not match wh.sha256"; fi
fi
echo "payload parts: $(ls /tmp/stage/p*/part.* 2>/dev/null | wc -l), wheel parts: $(ls /tmp/stage-wh 2>/dev/null | wc -l), ray parts: $(ls /tmp/stage-ray/r*/rpart.* 2>/dev/null | wc -l)"
