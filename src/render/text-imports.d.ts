/**
 * Bash imported as text (`import lib from "./x.bash" with { type: "text" }`): Bun and Deno load
 * the file as a string and `bun build --compile` embeds it. scripts/check-boundaries.ts allows
 * such imports only under src/render/.
 */
declare module "*.bash" {
  const text: string;
  export default text;
}
