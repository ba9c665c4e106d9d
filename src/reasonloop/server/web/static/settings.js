// A strategy's settings form, rendered from the JSON schema the catalog serves, each field labelled
// and described in the interface's language. Only the fields the user changed are sent; the rest
// keep the server's defaults.

import { el } from "./render.js";
import { localized, t } from "./i18n.js";

function resolve(schema, root) {
  if (schema && schema.$ref) {
    const name = schema.$ref.split("/").pop();
    return { ...((root.$defs || {})[name] || {}), ...schema, $ref: undefined };
  }
  return schema || {};
}

/** The field's own type, seeing through `X | None` (anyOf with null). */
function shape(prop, root) {
  let s = resolve(prop, root);
  let nullable = false;
  if (s.anyOf) {
    const parts = s.anyOf.map((p) => resolve(p, root));
    nullable = parts.some((p) => p.type === "null");
    const main = parts.find((p) => p.type !== "null") || {};
    s = { ...main, ...s, anyOf: undefined, type: main.type, enum: main.enum };
  }
  if (!s.type && s.enum) s.type = typeof s.enum[0] === "number" ? "number" : "string";
  return { ...s, nullable };
}

/** {"a": {"b": 1}} as {"a.b": 1}: saved values by field name. */
function flatten(value, prefix = "", out = {}) {
  for (const [key, v] of Object.entries(value || {})) {
    if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, `${prefix}${key}.`, out);
    else out[prefix + key] = v;
  }
  return out;
}

function words(name) {
  return name.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());
}

/** The field's label: its own title, or its name in words where the title is only pydantic's
 * ("Timeout S" from timeout_s). */
function label(s, key) {
  const title = localized(s, "title");
  const generated = key.split("_").map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(" ");
  return title && title !== generated ? title : words(key);
}

/** "default: …" with the default as a person reads it (an unset one is "none"). */
function defaultText(def) {
  let value;
  if (def === null) value = t("settings.unset");
  else if (typeof def === "boolean") value = t(def ? "settings.on" : "settings.off");
  else if (Array.isArray(def)) value = def.length ? def.join(", ") : t("settings.unset");
  else if (typeof def === "object") value = JSON.stringify(def);
  else value = String(def);
  return t("settings.default", { value });
}

export class SettingsForm {
  constructor(form) {
    this.form = form;
    this.fields = new Map();
    this.storageKey = "";
    form.addEventListener("input", (e) => this.changed(e.target));
    form.addEventListener("change", (e) => this.changed(e.target));
  }

  render(schema, storageKey) {
    this.form.replaceChildren();
    this.fields.clear();
    this.storageKey = storageKey;
    const saved = flatten(JSON.parse(localStorage.getItem(storageKey) || "{}"));
    const props = (schema && schema.properties) || {};
    if (!Object.keys(props).length) {
      this.form.append(el("p", "hint", t("settings.none")));
      return;
    }
    this.addFields(props, schema, "", this.form, saved);
  }

  /** One row per field; a nested settings object becomes a group of rows named "group.field". */
  addFields(props, root, prefix, container, saved) {
    for (const [key, prop] of Object.entries(props)) {
      const s = shape(prop, root);
      const name = prefix + key;
      if (s.type === "object" && s.properties) {
        const group = el("fieldset", "group");
        group.dataset.group = name;
        group.append(el("legend", null, label(prop, key))); // the referenced model's title is a class name
        const about = localized(s, "description");
        if (about) group.append(el("p", "hint", about));
        this.addFields(s.properties, root, `${name}.`, group, saved);
        if (group.querySelector(".field")) container.append(group);
        continue;
      }
      const field = this.field(name, s);
      if (field) {
        container.append(field.row);
        this.fields.set(name, { ...field, schema: s });
        if (name in saved) this.set(name, saved[name]);
      }
    }
  }

  field(name, s) {
    const row = el("div", "field");
    row.dataset.field = name;
    const caption = el("label", null);
    const id = `setting-${name}`;
    caption.htmlFor = id;
    caption.append(el("span", "name", label(s, name.split(".").pop())));
    let input;
    const def = s.default;
    if (s.enum) {
      input = el("select");
      if (s.nullable) input.append(new Option("—", ""));
      for (const v of s.enum) input.append(new Option(String(v), String(v)));
      input.value = def == null ? "" : String(def);
    } else if (s.type === "boolean" && s.nullable) {
      input = el("select"); // unset (the server decides), yes or no
      input.append(new Option("—", ""), new Option(t("settings.on"), "true"), new Option(t("settings.off"), "false"));
      input.value = def == null ? "" : String(def);
    } else if (s.type === "boolean") {
      input = el("input");
      input.type = "checkbox";
      input.checked = Boolean(def);
      row.classList.add("check");
    } else if (s.type === "integer" || s.type === "number") {
      input = el("input");
      input.type = "number";
      input.step = s.type === "integer" ? "1" : "any";
      if (s.minimum !== undefined) input.min = String(s.minimum);
      if (s.exclusiveMinimum !== undefined) input.min = String(s.type === "integer" ? s.exclusiveMinimum + 1 : s.exclusiveMinimum);
      if (s.maximum !== undefined) input.max = String(s.maximum);
      if (s.exclusiveMaximum !== undefined) input.max = String(s.type === "integer" ? s.exclusiveMaximum - 1 : s.exclusiveMaximum);
      input.value = def == null ? "" : String(def);
      if (def == null) input.placeholder = "—";
    } else if (s.type === "array") {
      input = el("textarea");
      input.rows = 2;
      input.value = Array.isArray(def) ? def.join("\n") : "";
      input.placeholder = t("settings.listHint");
    } else if (s.type === "string" || !s.type) {
      input = el("input");
      input.type = "text";
      if (s.maxLength !== undefined) input.maxLength = s.maxLength;
      input.value = def == null ? "" : String(def);
    } else {
      return null; // objects: not editable as a form field
    }
    input.id = id;
    input.name = name;
    caption.append(input);
    row.append(caption);
    const about = localized(s, "description");
    if (about || def !== undefined) {
      const hint = el("p", "hint", about);
      if (def !== undefined) hint.append(el("span", "default", defaultText(def)));
      row.append(hint);
    }
    row.append(el("p", "field-error"));
    row.querySelector(".field-error").hidden = true;
    return { row, input };
  }

  set(name, value) {
    const f = this.fields.get(name);
    if (!f) return;
    if (f.input.type === "checkbox") f.input.checked = Boolean(value);
    else if (f.schema.type === "array") f.input.value = (value || []).join("\n");
    else f.input.value = value == null ? "" : String(value);
    f.input.dataset.dirty = "1";
  }

  changed(input) {
    const f = this.fields.get(input.name);
    if (!f) return;
    input.dataset.dirty = "1";
    this.clearError(input.name);
    localStorage.setItem(this.storageKey, JSON.stringify(this.values()));
  }

  value(name) {
    const { input, schema: s } = this.fields.get(name);
    if (input.type === "checkbox") return input.checked;
    const raw = input.value;
    if (raw === "" && s.nullable) return null;
    if (s.type === "boolean") return raw === "true";
    if (s.type === "integer" || s.type === "number") return raw === "" ? null : Number(raw);
    if (s.type === "array") return raw.split("\n").map((x) => x.trim()).filter(Boolean);
    if (s.enum && typeof s.enum[0] === "number") return Number(raw);
    return raw;
  }

  /** The changed fields' values, nested as the schema nests them. */
  values() {
    const out = {};
    for (const [name, f] of this.fields) {
      if (!f.input.dataset.dirty) continue;
      const path = name.split(".");
      let at = out;
      for (const part of path.slice(0, -1)) at = at[part] ??= {};
      at[path[path.length - 1]] = this.value(name);
    }
    return out;
  }

  /** Check the bounds the schema declares; false (and the field marked) when one is broken. */
  validate() {
    let ok = true;
    for (const [name, f] of this.fields) {
      if (!f.input.dataset.dirty) continue;
      if (!f.input.checkValidity()) {
        this.showError(name, f.input.validationMessage);
        ok = false;
      }
    }
    return ok;
  }

  reset() {
    localStorage.removeItem(this.storageKey);
  }

  /** Show the server's message at the field it names ("settings.max_rounds"); false if no such field. */
  showError(name, message) {
    const f = this.fields.get(name);
    if (!f) return false;
    const box = f.row.querySelector(".field-error");
    box.textContent = message;
    box.hidden = false;
    f.row.classList.add("invalid");
    f.input.setAttribute("aria-invalid", "true");
    f.row.closest("details")?.setAttribute("open", "");
    return true;
  }

  clearError(name) {
    const f = this.fields.get(name);
    if (!f) return;
    f.row.classList.remove("invalid");
    f.input.removeAttribute("aria-invalid");
    f.row.querySelector(".field-error").hidden = true;
  }
}
