# Run from the repository's root: sh tests/test_pricing.sh
. ./src/pricing.sh
failed=0
check() {
    got=$(apply_discount "$1" "$2")
    if [ "$got" != "$3" ]; then echo "FAIL: apply_discount $1 $2 = $got, expected $3"; failed=1; fi
}
check 200 10 180.00
check 50 0 50.00
check 80 25 60.00
[ "$failed" = 0 ] && echo "all pricing tests pass"
exit "$failed"
