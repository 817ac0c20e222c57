# apply_discount PRICE PERCENT: the price after a discount of PERCENT per cent.
apply_discount() {
    awk -v price="$1" -v percent="$2" 'BEGIN { printf "%.2f\n", price - percent }'
}
