// The person of the device flow (RFC 8628), at oidc-provider's development
// interactions: opens the verification URI with the user code, confirms the device,
// logs in, grants consent — or, with `deny`, aborts at the confirmation — with the same
// form posts a browser makes (cookies kept, redirects followed by hand).
//
//   node approve.mjs VERIFICATION_URI USER_CODE [approve|deny]
//
// Exits 0 when the provider said the device was signed in (or, with deny, aborted).
const [verificationUri, userCode, decision = 'approve'] = process.argv.slice(2);
if (!verificationUri || !userCode) {
  console.error('usage: node approve.mjs VERIFICATION_URI USER_CODE [approve|deny]');
  process.exit(2);
}

const cookies = new Map();

async function request(url, form) {
  const headers = { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
  const init = { redirect: 'manual', headers };
  if (form) {
    init.method = 'POST';
    init.body = new URLSearchParams(form);
  }
  const response = await fetch(url, init);
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const at = pair.indexOf('=');
    cookies.set(pair.slice(0, at), pair.slice(at + 1));
  }
  const location = response.headers.get('location');
  if (location) return request(new URL(location, url).href);
  return { url, html: await response.text() };
}

// The first form of a page: its action and fields (hidden ones with their values).
function firstForm(page) {
  const form = page.html.match(/<form[^>]*action="([^"]*)"[^>]*>([\s\S]*?)<\/form>/);
  if (!form) return null;
  const fields = {};
  for (const input of form[2].matchAll(/<input([^>]*)>/g)) {
    const name = input[1].match(/name="([^"]*)"/);
    const value = input[1].match(/value="([^"]*)"/);
    if (name) fields[name[1]] = value ? value[1] : '';
  }
  return { action: new URL(form[1].replaceAll('&amp;', '&'), page.url).href, fields };
}

const start = new URL(verificationUri);
start.searchParams.set('user_code', userCode);
let page = await request(start.href);
for (let step = 0; step < 8; step += 1) {
  if (/Sign-in Success|successfully signed in|device is now signed in/i.test(page.html)) {
    console.log('approved');
    process.exit(0);
  }
  const form = firstForm(page);
  if (!form) break;
  if ('login' in form.fields || /name="login"/.test(page.html)) {
    form.fields.login = 'person@example.com';
    form.fields.password = 'any';
  }
  if ('confirm' in form.fields && decision === 'deny') {
    delete form.fields.confirm;
    form.fields.abort = 'yes';
    await request(form.action, form.fields);
    console.log('denied');
    process.exit(0);
  }
  page = await request(form.action, form.fields);
}
console.error(`the device flow did not finish; last page at ${page.url}:\n${page.html}`);
process.exit(1);
