"""What the generators of format/ (gen_vk_*.py) and capture/vk/cap_vk_gen.py read from the Vulkan
registry, vk.xml, the same way: which elements are Vulkan's (not Vulkan SC's), its header
version, and the values of an enumeration's names, core and added by versions and extensions (an offset in an extension's number range, or
a value), through aliases. Python's standard library only.
"""


def vulkan_api(e):
    """Whether a registry element applies to Vulkan (no api attribute, or one naming it)."""
    api = e.get("api")
    return api is None or "vulkan" in api.split(",")


def header_version(reg):
    """VK_HEADER_VERSION of the registry, as text ("" when it has none)."""
    for e in reg.iter("type"):
        if e.get("category") == "define" and (e.findtext("name") or "") == "VK_HEADER_VERSION":
            return "".join(e.itertext()).split()[-1]
    return ""


def enum_values(reg, enum):
    """A function from a name of enumeration ENUM (say "VkFormat") to its value, or None."""
    values, aliases = {}, {}
    for enums in reg.findall("enums"):
        if enums.get("name") == enum:
            for e in enums.findall("enum"):
                if e.get("value") is not None:
                    values[e.get("name")] = int(e.get("value"), 0)
                elif e.get("alias"):
                    aliases[e.get("name")] = e.get("alias")

    def additions(parent, number):
        for req in parent.findall("require"):
            for e in req.findall("enum"):
                if e.get("extends") != enum or not vulkan_api(e):
                    continue
                name = e.get("name")
                if e.get("alias"):
                    aliases[name] = e.get("alias")
                elif e.get("offset") is not None:
                    ext = int(e.get("extnumber", number or 0))
                    v = 1000000000 + (ext - 1) * 1000 + int(e.get("offset"))
                    values[name] = -v if e.get("dir") == "-" else v
                elif e.get("value") is not None:
                    values[name] = int(e.get("value"), 0)

    for feat in reg.findall("feature"):
        if vulkan_api(feat):
            additions(feat, None)
    for ext in reg.find("extensions").findall("extension"):
        if ext.get("supported") != "disabled":
            additions(ext, ext.get("number"))

    def value(name):
        seen = set()
        while name not in values and name in aliases and name not in seen:
            seen.add(name)
            name = aliases[name]
        return values.get(name)

    return value
