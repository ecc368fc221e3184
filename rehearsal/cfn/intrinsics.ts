/**
 * CloudFormation intrinsic functions, resolved against the physical resources the rehearsal stood
 * up: Ref, Fn::GetAtt, Fn::Join, Fn::Sub, Fn::Select, Fn::Split and the pseudo parameters. Anything
 * else is refused by name, so a template that needs more fails loudly instead of half-resolving.
 */

/** What a logical id resolved to: its `Ref` value and its `Fn::GetAtt` attributes. */
export interface PhysicalResource {
  ref: string;
  attributes: Readonly<Record<string, string>>;
}

export interface ResolveScope {
  /** Physical resources by logical id. */
  resources: ReadonlyMap<string, PhysicalResource>;
  /** `AWS::AccountId`, `AWS::Region`, `AWS::Partition`, `AWS::URLSuffix`, `AWS::StackName`, … */
  pseudo: Readonly<Record<string, string>>;
}

export class UnresolvableError extends Error {
  override readonly name = "UnresolvableError";
}

function ref(name: string, scope: ResolveScope): string {
  if (name.startsWith("AWS::")) {
    const value = scope.pseudo[name];
    if (value === undefined) throw new UnresolvableError(`no value for the pseudo parameter ${name}`);
    return value;
  }
  const resource = scope.resources.get(name);
  if (!resource) throw new UnresolvableError(`Ref to ${name}, which was not stood up`);
  return resource.ref;
}

function getAtt(logicalId: string, attribute: string, scope: ResolveScope): string {
  const resource = scope.resources.get(logicalId);
  if (!resource) throw new UnresolvableError(`Fn::GetAtt on ${logicalId}, which was not stood up`);
  const value = resource.attributes[attribute];
  if (value === undefined) throw new UnresolvableError(`Fn::GetAtt ${logicalId}.${attribute} is not known`);
  return value;
}

function asString(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  throw new UnresolvableError(`${where}: expected a string, got ${JSON.stringify(value)}`);
}

function asList(value: unknown, where: string): unknown[] {
  if (!Array.isArray(value))
    throw new UnresolvableError(`${where}: expected a list, got ${JSON.stringify(value)}`);
  return value;
}

/** `${Name}`, `${Logical.Attr}` and `${!Literal}` of Fn::Sub, with optional local variables. */
function substitute(template: string, variables: Record<string, unknown>, scope: ResolveScope): string {
  return template.replace(/\$\{([^}]*)\}/g, (_, inner: string) => {
    if (inner.startsWith("!")) return `\${${inner.slice(1)}}`;
    const name = inner.trim();
    if (Object.hasOwn(variables, name))
      return asString(resolveIntrinsics(variables[name], scope), `Fn::Sub ${name}`);
    const dot = name.indexOf(".");
    if (dot > 0 && !name.startsWith("AWS::")) return getAtt(name.slice(0, dot), name.slice(dot + 1), scope);
    return ref(name, scope);
  });
}

/** Resolves every intrinsic in `value` (objects and lists recursively); plain values come back as they are. */
export function resolveIntrinsics(value: unknown, scope: ResolveScope): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveIntrinsics(item, scope));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value as Record<string, unknown>);
  const [first] = entries;
  if (entries.length === 1 && first && (first[0] === "Ref" || first[0].startsWith("Fn::"))) {
    const [fn, arg] = first;
    switch (fn) {
      case "Ref":
        return ref(asString(arg, "Ref"), scope);
      case "Fn::GetAtt": {
        const parts = typeof arg === "string" ? arg.split(/\.(.*)/s, 2) : asList(arg, "Fn::GetAtt");
        const [logicalId, attribute] = parts.map((part) =>
          asString(resolveIntrinsics(part, scope), "Fn::GetAtt"),
        );
        if (!logicalId || !attribute)
          throw new UnresolvableError(`malformed Fn::GetAtt ${JSON.stringify(arg)}`);
        return getAtt(logicalId, attribute, scope);
      }
      case "Fn::Join": {
        const [delimiter, items] = asList(arg, "Fn::Join");
        const list = asList(resolveIntrinsics(items, scope), "Fn::Join");
        return list.map((item) => asString(item, "Fn::Join")).join(asString(delimiter, "Fn::Join"));
      }
      case "Fn::Sub": {
        if (typeof arg === "string") return substitute(arg, {}, scope);
        const [template, variables] = asList(arg, "Fn::Sub");
        return substitute(asString(template, "Fn::Sub"), (variables ?? {}) as Record<string, unknown>, scope);
      }
      case "Fn::Select": {
        const [index, items] = asList(arg, "Fn::Select");
        const list = asList(resolveIntrinsics(items, scope), "Fn::Select");
        const i = Number(resolveIntrinsics(index, scope));
        if (!Number.isInteger(i) || i < 0 || i >= list.length)
          throw new UnresolvableError(`Fn::Select index ${String(index)} is out of range`);
        return list[i];
      }
      case "Fn::Split": {
        const [delimiter, source] = asList(arg, "Fn::Split");
        return asString(resolveIntrinsics(source, scope), "Fn::Split").split(
          asString(delimiter, "Fn::Split"),
        );
      }
      default:
        throw new UnresolvableError(`the rehearsal does not resolve ${fn}`);
    }
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, resolveIntrinsics(item, scope)]));
}

/** Resolves `value` and insists on a string (an environment variable, an ARN). */
export function resolveString(value: unknown, scope: ResolveScope, where: string): string {
  return asString(resolveIntrinsics(value, scope), where);
}

/** The logical ids `value` refers to (Ref, Fn::GetAtt, Fn::Sub's `${…}`), for ordering and lookups. */
export function referencedIds(value: unknown, found: Set<string> = new Set()): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) referencedIds(item, found);
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      if (key === "Ref" && typeof item === "string" && !item.startsWith("AWS::")) found.add(item);
      else if (key === "Fn::GetAtt") {
        const id = typeof item === "string" ? item.split(".")[0] : Array.isArray(item) ? item[0] : undefined;
        if (typeof id === "string") found.add(id);
      } else if (key === "Fn::Sub") {
        const text = typeof item === "string" ? item : Array.isArray(item) ? item[0] : undefined;
        for (const match of String(text).matchAll(/\$\{([^!}][^}.]*)[^}]*\}/g)) {
          const id = match[1]?.trim();
          if (id && !id.startsWith("AWS::")) found.add(id);
        }
        if (Array.isArray(item)) referencedIds(item[1], found);
      } else referencedIds(item, found);
    }
  }
  return found;
}
