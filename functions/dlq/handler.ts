export const handler = async () => {
  throw new Error("placeholder");
};
