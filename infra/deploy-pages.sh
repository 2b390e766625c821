#!/usr/bin/env bash
# Usage: infra/deploy-pages.sh STACK [REGION]
#
# The pages' deploy step, after `sam deploy` (the cloud form of what the local runner does at
# start): reads the stack's outputs, writes shop/config.json for Cognito's managed login
# (domain and app client id), syncs the pages' site (`local-cloud pages`: shop/ but its
# sources _layout/ and templates/, each page with its shared head and layout included, the
# same expansion the runner serves) to the stack's ShopBucket under shop/, leaving the sale
# pages that publish-sale wrote, and invalidates the distribution's copies of the static
# pages. The site is written first, so that a page that does not expand changes nothing. On
# the first deploy the stack's ShopDomain parameter is still empty (the sign-in client cannot
# name the distribution in the template, see ShopDomain there): it then updates the stack
# once more, same template and parameters, with ShopDomain set to the distribution's host, so
# that sign-in comes back to it.
#
# Needs the deployer's AWS credentials (the usual variables or profile). The AWS CLI comes
# from the project-local venv .local/venv/aws (infra/python/aws.txt), the runner from cargo;
# AWS_CLI and LOCAL_CLOUD name other commands (the pages' contract test passes a recording
# stand-in and the built runner).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: $0 STACK [REGION]" >&2
    exit 2
fi
stack=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
site=$(mktemp -d)
config=$(mktemp)
trap 'rm -rf "$site" "$config"' EXIT
read -r -a local_cloud <<<"${LOCAL_CLOUD:-cargo run -q -p local-cloud --}"
"${local_cloud[@]}" pages --pages shop --out "$site"
if [[ -n ${AWS_CLI:-} ]]; then
    read -r -a aws <<<"$AWS_CLI"
else
    bash infra/python/ensure-venv.sh aws
    aws=(.local/venv/aws/bin/aws)
fi
if [[ $# -eq 2 ]]; then
    aws+=(--region "$2")
fi

output() { # NAME
    "${aws[@]}" cloudformation describe-stacks --stack-name "$stack" \
        --query "Stacks[0].Outputs[?OutputKey=='$1'].OutputValue" --output text
}
parameter() { # NAME
    "${aws[@]}" cloudformation describe-stacks --stack-name "$stack" \
        --query "Stacks[0].Parameters[?ParameterKey=='$1'].ParameterValue" --output text
}

bucket=$(output ShopBucketName)
shop_url=$(output ShopUrl)
host=${shop_url#https://}
host=${host%%/*}
domain=$(output ShopSignInDomain)
client_id=$(output ShopClientId)
if [[ -z $bucket || $bucket == None ]]; then
    echo "deploy-pages: stack $stack has no ShopBucketName output; deploy the template first" >&2
    exit 1
fi

if [[ $(parameter ShopDomain) != "$host" ]]; then
    # The deployed template again, every other parameter as it is: only ShopDomain changes.
    echo "deploy-pages: setting ShopDomain=$host (the sign-in's callback host)"
    parameters=(ParameterKey=ShopDomain,ParameterValue="$host")
    for key in $("${aws[@]}" cloudformation describe-stacks --stack-name "$stack" \
        --query 'Stacks[0].Parameters[].ParameterKey' --output text); do
        [[ $key == ShopDomain ]] || parameters+=(ParameterKey="$key",UsePreviousValue=true)
    done
    "${aws[@]}" cloudformation update-stack --stack-name "$stack" --use-previous-template \
        --capabilities CAPABILITY_IAM CAPABILITY_AUTO_EXPAND --parameters "${parameters[@]}" \
        >/dev/null
    "${aws[@]}" cloudformation wait stack-update-complete --stack-name "$stack"
fi

printf '{"signIn":"cognito","domain":"%s","clientId":"%s"}\n' "$domain" "$client_id" >"$config"

# Static pages: revalidated at the edge within a minute of a deploy.
"${aws[@]}" s3 sync "$site/" "s3://$bucket/shop/" --exclude 'sales/*' \
    --cache-control 'public, max-age=60' --delete --exclude 'config.json'
"${aws[@]}" s3 cp "$config" "s3://$bucket/shop/config.json" \
    --content-type application/json --cache-control 'no-cache'

distribution=$("${aws[@]}" cloudfront list-distributions \
    --query "DistributionList.Items[?DomainName=='$host'].Id | [0]" --output text)
if [[ -n $distribution && $distribution != None ]]; then
    "${aws[@]}" cloudfront create-invalidation --distribution-id "$distribution" \
        --paths '/shop/*' >/dev/null
fi
echo "deploy-pages: the shop is at $shop_url"
