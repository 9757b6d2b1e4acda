// The agent-loop section's tasks (agent-loop.ts): desktop tasks of the kinds
// OSWorld has, each a setup and 3 decision points. At each point the scripted
// agent has 3 alternatives, and the point's check passes after exactly one of
// them: the others do what an agent's wrong guess does (a wrong file, a
// broken config, a server on the wrong port, a file deleted), damage that
// has to be undone before the next try. Which alternative is right moves
// from point to point, so every strategy pays for 0, 1 and 2 failures.
// Every action and check is a shell script run inside the workspace.

export interface DecisionPoint {
  goal: string;
  /** Shell scripts; exactly one makes `check` pass. */
  alternatives: [string, string, string];
  /** Exits 0 once the goal is reached. */
  check: string;
}

export interface AgentTask {
  name: string;
  setup: string;
  points: [DecisionPoint, DecisionPoint, DecisionPoint];
}

/** The right alternative first, then the two wrong ones: placed at `right` among the three. */
function point(goal: string, check: string, right: string, wrong: [string, string], at: number): DecisionPoint {
  const alternatives = [...wrong];
  alternatives.splice(at % 3, 0, right);
  return { goal, check, alternatives: alternatives as [string, string, string] };
}

/** Waits up to 2 s for a page on 127.0.0.1:PORT inside the workspace to contain TEXT. */
function pageHas(port: number, text: string): string {
  return `for i in $(seq 20); do python3 -c 'import sys,urllib.request; sys.exit(0 if ${JSON.stringify(text)} in urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=1).read().decode() else 1)' 2>/dev/null && exit 0; sleep 0.1; done; exit 1`;
}

function editDocument(k: number, at: number): AgentTask {
  const doc = `/root/docs/report-${k}.txt`;
  return {
    name: `edit and save a document (${k})`,
    setup: `mkdir -p /root/docs && printf 'title: draft\\nbody: todo\\n' > ${doc}`,
    points: [
      point(
        'set the title',
        `grep -qx 'title: Report ${k}' ${doc}`,
        `sed -i 's/^title: draft$/title: Report ${k}/' ${doc}`,
        [`sed -i 's/^title: draft$/title: Report/' ${doc}`, `printf 'title: Report ${k}\\n' > /root/docs/report.txt; rm -f ${doc}`],
        at,
      ),
      point(
        'write the body',
        `grep -qx 'body: numbers for quarter ${k}' ${doc} && grep -q '^title' ${doc}`,
        `sed -i 's/^body: todo$/body: numbers for quarter ${k}/' ${doc}`,
        [`printf 'body: numbers for quarter ${k}\\n' > ${doc}`, `sed -i 's/^body: todo$/body: numbers/' ${doc}`],
        at + 1,
      ),
      point(
        'save a copy as PDF-ready text',
        `cmp -s ${doc} /root/docs/final-${k}.txt`,
        `cp ${doc} /root/docs/final-${k}.txt`,
        [`mv ${doc} /root/docs/final-${k}.txt`, `cp ${doc} /root/final-${k}.txt`],
        at + 2,
      ),
    ],
  };
}

function fillForm(k: number, at: number): AgentTask {
  const port = 8600 + k;
  const store = `/root/form-${k}.json`;
  // A local web app: GET shows the form, POST stores the fields it knows and refuses the rest.
  const server = `import http.server, json, urllib.parse
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'<form method=post><input name=name><input name=email><input name=plan></form>')
    def do_POST(self):
        fields = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers['Content-Length'])).decode()))
        try: stored = json.load(open('${store}'))
        except Exception: stored = {}
        ok = set(fields) <= {'name', 'email', 'plan'}
        if ok: stored.update(fields); json.dump(stored, open('${store}', 'w'))
        self.send_response(200 if ok else 400); self.end_headers()
http.server.HTTPServer(('127.0.0.1', ${port}), H).serve_forever()`;
  const post = (body: string) =>
    `python3 -c 'import urllib.request; urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:${port}/", data=b"${body}"), timeout=2)' || true`;
  const stored = (key: string, value: string) => `python3 -c 'import json,sys; sys.exit(0 if json.load(open("${store}")).get("${key}") == "${value}" else 1)'`;
  return {
    name: `fill a form in a local web app (${k})`,
    setup: `cat > /root/form-${k}.py <<'EOF'\n${server}\nEOF\nsetsid python3 /root/form-${k}.py </dev/null >/dev/null 2>&1 &\n${pageHas(port, '<form')}`,
    points: [
      point(
        'fill in the name',
        stored('name', `Ada ${k}`),
        post(`name=Ada+${k}`),
        [post(`fullname=Ada+${k}`), `pkill -f form-${k}.py; ${post(`name=Ada+${k}`)}`],
        at,
      ),
      point(
        'fill in the email',
        `${stored('email', `ada${k}@example.org`)} && ${stored('name', `Ada ${k}`)}`,
        post(`email=ada${k}%40example.org`),
        [post(`mail=ada${k}%40example.org`), `rm -f ${store}; ${post(`email=ada${k}%40example.org`)}`],
        at + 1,
      ),
      point(
        'choose the plan',
        `${stored('plan', 'team')} && ${pageHas(port, '<form')}`,
        post('plan=team'),
        [post('plan=Team+plan&x=1'), `pkill -f form-${k}.py`],
        at + 2,
      ),
    ],
  };
}

function renameFiles(k: number, at: number): AgentTask {
  const dir = `/root/photos-${k}`;
  const expect = (names: string) => `test "$(ls ${dir} | tr '\\n' ' ')" = '${names}'`;
  return {
    name: `rename files (${k})`,
    setup: `mkdir -p ${dir} && cd ${dir} && for i in 1 2 3 4 5 6; do echo "photo $i of ${k}" > IMG_$i.JPG; done`,
    points: [
      point(
        'lower-case the extensions',
        expect('IMG_1.jpg IMG_2.jpg IMG_3.jpg IMG_4.jpg IMG_5.jpg IMG_6.jpg '),
        `cd ${dir} && for f in *.JPG; do mv "$f" "\${f%.JPG}.jpg"; done`,
        [`cd ${dir} && for f in *.JPG; do mv "$f" "$f.jpg"; done`, `cd ${dir} && rm -f IMG_6.JPG && for f in *.JPG; do mv "$f" "\${f%.JPG}.jpg"; done`],
        at,
      ),
      point(
        'name them by trip',
        expect('trip-${k}-1.jpg trip-${k}-2.jpg trip-${k}-3.jpg trip-${k}-4.jpg trip-${k}-5.jpg trip-${k}-6.jpg '),
        `cd ${dir} && for f in IMG_*.jpg; do mv "$f" "trip-${k}-\${f#IMG_}"; done`,
        [`cd ${dir} && for f in IMG_*.jpg; do mv "$f" "trip-\${f#IMG_}"; done`, `cd ${dir} && for f in IMG_*.jpg; do mv "$f" trip-${k}.jpg; done`],
        at + 1,
      ),
      point(
        'keep the contents',
        `${expect('trip-${k}-1.jpg trip-${k}-2.jpg trip-${k}-3.jpg trip-${k}-4.jpg trip-${k}-5.jpg trip-${k}-6.jpg ')} && grep -qx 'photo 6 of ${k}' ${dir}/trip-${k}-6.jpg`,
        `sync ${dir}/trip-${k}-6.jpg`,
        [`: > ${dir}/trip-${k}-6.jpg`, `echo 'photo 6' > ${dir}/trip-${k}-6.jpg`],
        at + 2,
      ),
    ],
  };
}

function configureApp(k: number, at: number): AgentTask {
  const file = `/root/.config/app-${k}/settings.json`;
  const has = (py: string) => `python3 -c 'import json,sys; c = json.load(open("${file}")); sys.exit(0 if ${py} else 1)'`;
  const set = (py: string) => `python3 -c 'import json; c = json.load(open("${file}")); ${py}; json.dump(c, open("${file}", "w"))'`;
  return {
    name: `configure an app (${k})`,
    setup: `mkdir -p /root/.config/app-${k} && echo '{"theme": "light", "autosave": false, "fontSize": 12}' > ${file}`,
    points: [
      point(
        'switch to the dark theme',
        has('c["theme"] == "dark"'),
        set('c["theme"] = "dark"'),
        [set('c["Theme"] = "dark"'), `sed -i 's/"light"/dark/' ${file}`],
        at,
      ),
      point(
        'turn autosave on',
        has('c["autosave"] is True and c["theme"] == "dark"'),
        set('c["autosave"] = True'),
        [set('c["autosave"] = "yes"'), `echo '{"autosave": true}' > ${file}`],
        at + 1,
      ),
      point(
        'a bigger font',
        has(`c["fontSize"] == ${14 + (k % 4)} and c["autosave"] is True`),
        set(`c["fontSize"] = ${14 + (k % 4)}`),
        [set(`c["fontSize"] = "${14 + (k % 4)}px"`), `rm -f ${file}`],
        at + 2,
      ),
    ],
  };
}

function devServer(k: number, at: number): AgentTask {
  const port = 8700 + k;
  const site = `/root/site-${k}`;
  const serve = (dir: string, p: number) => `cd ${dir} && setsid python3 -m http.server ${p} --bind 127.0.0.1 </dev/null >/dev/null 2>&1 & sleep 0.3`;
  return {
    name: `run a dev server and check its page (${k})`,
    setup: `mkdir -p ${site}/public && echo '<h1>draft ${k}</h1>' > ${site}/public/index.html && echo 'notes' > ${site}/README`,
    points: [
      point(
        'build the page',
        `grep -q '<h1>site ${k}</h1>' ${site}/public/index.html`,
        `sed -i 's/draft/site/' ${site}/public/index.html`,
        [`sed -i 's/draft/site/' ${site}/README`, `rm -rf ${site}/public`],
        at,
      ),
      point('serve it', pageHas(port, `site ${k}`), serve(`${site}/public`, port), [serve(site, port), serve(`${site}/public`, port + 100)], at + 1),
      point(
        'add the footer, served live',
        `${pageHas(port, 'footer')} && ${pageHas(port, `site ${k}`)}`,
        `echo '<footer>footer</footer>' >> ${site}/public/index.html`,
        [
          `echo '<footer>footer</footer>' > ${site}/public/index.html`,
          `pkill -f 'http.server ${port}'; echo '<footer>footer</footer>' >> ${site}/public/index.html`,
        ],
        at + 2,
      ),
    ],
  };
}

const KINDS = [editDocument, fillForm, renameFiles, configureApp, devServer];

/** `count` tasks, the kinds in turn; the right alternative's place differs from task to task. */
export function agentTasks(count: number): AgentTask[] {
  return Array.from({ length: count }, (_, i) => KINDS[i % KINDS.length]!(i, i));
}
