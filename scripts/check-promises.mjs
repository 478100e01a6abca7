// Finds promises that are neither awaited, returned, assigned nor explicitly discarded with `void`: an expression
// statement whose value is a promise (a store call whose answer nobody waits for). Run by `npm test` after tsc.
import ts from 'typescript';
import { dirname, relative } from 'node:path';

const configPath = ts.findConfigFile(process.cwd(), ts.sys.fileExists, 'tsconfig.json');
const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
const checker = program.getTypeChecker();
const root = dirname(configPath);

function isThenable(type) {
  for (const t of type.isUnion() ? type.types : [type]) {
    // Fastify's reply is thenable but chaining on it is how headers are set.
    if (t.getSymbol()?.getName() === 'FastifyReply' || t.aliasSymbol?.getName() === 'FastifyReply') continue;
    if (t.getProperty('then')) return true;
  }
  return false;
}

/** `p.catch(f)` and `p.then(f, g)` handle rejection themselves. */
function handlesRejection(expr) {
  if (!ts.isCallExpression(expr) || !ts.isPropertyAccessExpression(expr.expression)) return false;
  const name = expr.expression.name.text;
  return name === 'catch' || (name === 'then' && expr.arguments.length === 2);
}

// node:test's own functions return promises the runner waits for.
const testFunctions = new Set(['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach']);
const isTestCall = (expr) => ts.isCallExpression(expr) && ts.isIdentifier(expr.expression) && testFunctions.has(expr.expression.text);

const findings = [];
for (const file of program.getSourceFiles()) {
  if (file.isDeclarationFile || file.fileName.includes('/node_modules/')) continue;
  const visit = (node) => {
    if (ts.isExpressionStatement(node)) {
      let expr = node.expression;
      while (ts.isParenthesizedExpression(expr)) expr = expr.expression;
      const discarded = ts.isVoidExpression(expr) || ts.isAwaitExpression(expr) || isTestCall(expr) || handlesRejection(expr) || (ts.isBinaryExpression(expr) && [ts.SyntaxKind.EqualsToken, ts.SyntaxKind.QuestionQuestionEqualsToken, ts.SyntaxKind.BarBarEqualsToken].includes(expr.operatorToken.kind));
      if (!discarded && isThenable(checker.getTypeAtLocation(expr))) {
        const { line, character } = file.getLineAndCharacterOfPosition(node.getStart(file));
        findings.push(`${relative(root, file.fileName)}:${line + 1}:${character + 1}: promise not awaited: ${node.getText(file).slice(0, 100)}`);
      }
    }
    // A promise used as a truth value or handed to a callback expecting nothing (forEach) is as lost.
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'forEach') {
      const fn = node.arguments[0];
      if (fn && (ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) && fn.modifiers?.some((m) => m.kind === ts.SyntaxKind.AsyncKeyword)) {
        const { line, character } = file.getLineAndCharacterOfPosition(node.getStart(file));
        findings.push(`${relative(root, file.fileName)}:${line + 1}:${character + 1}: async callback to forEach`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
}

for (const f of findings) console.error(f);
if (findings.length > 0) {
  console.error(`${findings.length} promise(s) not awaited (write \`void\` before a call whose answer is deliberately not waited for)`);
  process.exit(1);
}
